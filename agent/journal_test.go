package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/internal/journaltest"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// TestJournaledRunDoesNotRepeatCompletedSteps: a run crashes (its context is
// cancelled) while its second model call is in flight. Re-executed with the
// same journal, the first model call and the tool call — a side effect — are
// not repeated; the run completes from where it stopped.
func TestJournaledRunDoesNotRepeatCompletedSteps(t *testing.T) {
	var charges atomic.Int32
	var keys []string
	charge, err := tool.New(tool.Config{Name: "charge"}, func(ctx context.Context, _ struct{}) (string, error) {
		charges.Add(1)
		keys = append(keys, run.StepKey(ctx))
		tool.AddImages(ctx, run.Image{ID: "receipt", MimeType: "image/png", Content: []byte("png")})
		return "charged", nil
	})
	require.NoError(t, err)
	crash, cancelCrash := context.WithCancel(t.Context())
	b := setup(t, []scripted.Reply{
		scripted.ToolCall("charge", `{}`),
		scripted.Respond(func(*model.Request) scripted.Reply { cancelCrash(); return scripted.Reply{Err: context.Canceled} }),
		scripted.Text("Charged once."),
	}, func(c *agent.Config) { c.Tools = []tool.Tool{charge} })

	journal := journaltest.New("r1")
	in := &run.Input{InputContent: "charge me", RunID: "r1", SessionID: "s1"}
	first, _ := b.agent.Run(run.WithJournal(crash, journal), in)
	require.Equal(t, run.StatusCancelled, first.Status)
	require.Equal(t, []string{"model", "tool:charge"}, journal.Ran(), "the crashed model call recorded nothing")

	journal.Restart()
	out, err := b.agent.Run(run.WithJournal(t.Context(), journal), in)
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "Charged once.", out.Content)
	require.Equal(t, int32(1), charges.Load(), "the completed tool call is not repeated")
	require.Equal(t, []string{"r1:2"}, keys, "the tool saw its step's idempotency key")
	require.Len(t, b.model.Requests(), 3, "model calls: the first, the crashed one, the one after restart")
	require.Equal(t, "charged", *out.Tools[0].Result, "the replayed tool result is on the run")
	require.Len(t, out.Images, 1, "the image the tool call added is kept with its journaled result")
	require.Equal(t, "receipt", out.Images[0].ID)
}

// TestToolsGetAnIdempotencyKeyWithoutAJournal: outside the durable queue a
// tool's key is run id and tool call id.
func TestToolsGetAnIdempotencyKeyWithoutAJournal(t *testing.T) {
	var key string
	probe, err := tool.New(tool.Config{Name: "probe"}, func(ctx context.Context, _ struct{}) (string, error) {
		key = run.StepKey(ctx)
		return "ok", nil
	})
	require.NoError(t, err)
	b := setup(t, []scripted.Reply{scripted.ToolCall("probe", `{}`), scripted.Text("done")},
		func(c *agent.Config) { c.Tools = []tool.Tool{probe} })
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "go", RunID: "r9"})
	require.NoError(t, err)
	require.Equal(t, "r9:"+out.Tools[0].ToolCallID, key)
}
