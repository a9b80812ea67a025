package eventlog_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
)

func content(runID, text string) *run.RunContent {
	return &run.RunContent{BaseEvent: run.BaseEvent{RunID: runID}, Content: text}
}

// text decodes an entry's content, checking its name and that its data
// carries its index.
func text(t *testing.T, entry eventlog.Entry) string {
	t.Helper()
	require.Equal(t, "RunContent", entry.Name)
	var data struct {
		Content    string `json:"content"`
		EventIndex int64  `json:"event_index"`
	}
	require.NoError(t, json.Unmarshal(entry.Data, &data))
	require.Equal(t, entry.Index, data.EventIndex)
	return data.Content
}

// collect follows a run until the iterator ends, returning the texts and
// indices seen.
func collect(t *testing.T, log *eventlog.Memory, runID string, after int64) ([]string, []int64) {
	t.Helper()
	items, ok := log.Follow(t.Context(), runID, after, 0)
	require.True(t, ok)
	var texts []string
	var indices []int64
	for item := range items {
		texts = append(texts, text(t, item.Entry))
		indices = append(indices, item.Entry.Index)
	}
	return texts, indices
}

func TestIndicesAndReplay(t *testing.T) {
	log := eventlog.NewMemory(eventlog.MemoryConfig{})
	for _, text := range []string{"a", "b", "c"} {
		log.Append(content("r1", text))
	}
	log.Append(content("r2", "other run"))
	log.Finish("r1", run.StatusCompleted)

	texts, indices := collect(t, log, "r1", -1)
	require.Equal(t, []string{"a", "b", "c"}, texts)
	require.Equal(t, []int64{0, 1, 2}, indices)
	texts, _ = collect(t, log, "r1", 1)
	require.Equal(t, []string{"c"}, texts, "only the events after last_event_index")

	info, ok := log.Lookup("r1")
	require.True(t, ok)
	require.Equal(t, eventlog.Info{Status: run.StatusCompleted, Count: 3, LastIndex: 2}, info)
	_, ok = log.Lookup("nope")
	require.False(t, ok)
	_, ok = log.Follow(t.Context(), "nope", -1, 0)
	require.False(t, ok)

	// A continued run goes on numbering from where it stopped.
	log.Register("r1", run.StatusRunning)
	e := content("r1", "d")
	require.Equal(t, int64(3), log.Append(e).Index)
	require.Equal(t, int64(3), *e.EventIndex, "the index is written onto the event")
}

func TestFollowTailsLiveEventsUntilFinished(t *testing.T) {
	log := eventlog.NewMemory(eventlog.MemoryConfig{})
	log.Register("r1", run.StatusPending)
	info, _ := log.Lookup("r1")
	require.Equal(t, eventlog.Info{Status: run.StatusPending, LastIndex: -1}, info)

	// Bounded: without an idle report the follow ends here, and the test
	// fails below instead of hanging.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	items, ok := log.Follow(ctx, "r1", -1, 10*time.Millisecond)
	require.True(t, ok)
	silence := make(chan struct{}) // closed at the first idle report
	go func() {
		<-silence
		log.Append(content("r1", "x"))
		log.Append(content("r1", "y"))
		log.Finish("r1", run.StatusCompleted)
	}()
	var texts []string
	idle := 0
	for item := range items {
		if item.Idle {
			if idle++; idle == 1 {
				close(silence)
			}
			continue
		}
		texts = append(texts, text(t, item.Entry))
	}
	require.Equal(t, []string{"x", "y"}, texts)
	require.Positive(t, idle, "silence is reported")
}

func TestFollowEndsWithItsContext(t *testing.T) {
	log := eventlog.NewMemory(eventlog.MemoryConfig{})
	log.Register("r1", run.StatusRunning)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	items, _ := log.Follow(ctx, "r1", -1, 0)
	done := make(chan struct{})
	go func() {
		for range items {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Follow did not end with its context")
	}
}

func TestFinishedRunsAreEvicted(t *testing.T) {
	now := time.Unix(1000, 0)
	log := eventlog.NewMemory(eventlog.MemoryConfig{Retain: time.Minute, MaxFinished: 2, Now: func() time.Time { return now }})
	for _, id := range []string{"a", "b", "c"} {
		log.Append(content(id, id))
		log.Finish(id, run.StatusCompleted)
	}
	_, ok := log.Lookup("a")
	require.False(t, ok, "beyond the cap, the oldest finished run goes")
	_, ok = log.Lookup("c")
	require.True(t, ok)

	log.Register("live", run.StatusRunning)
	now = now.Add(2 * time.Minute)
	log.Register("trigger", run.StatusPending) // eviction runs on registration
	for _, id := range []string{"b", "c"} {
		_, ok := log.Lookup(id)
		require.False(t, ok, "past the retention %s goes", id)
	}
	_, ok = log.Lookup("live")
	require.True(t, ok, "a run in flight is never evicted")
}

func TestSeedContinuesNumbering(t *testing.T) {
	log := eventlog.NewMemory(eventlog.MemoryConfig{})
	log.Seed("r1", 7)
	require.Equal(t, int64(7), log.Append(content("r1", "after a restart")).Index)
	log.Seed("r1", 3)
	require.Equal(t, int64(8), log.Append(content("r1", "never backwards")).Index)
}

// TestTeamStreamKeepsMemberEvents: a team's own events go by their Team*
// names, and a member's events passed on in the team's stream are numbered
// in it, keep their own run_id and name, and never end it — only the
// team's own final event does.
func TestTeamStreamKeepsMemberEvents(t *testing.T) {
	log := eventlog.NewMemory(eventlog.MemoryConfig{})
	team := func(e run.Event) run.Event {
		b := e.Base()
		b.TeamID, b.TeamName, b.RunID = "crew", "Crew", "team-run"
		return e
	}
	member := func(e run.Event) run.Event {
		b := e.Base()
		b.AgentID, b.RunID, b.ParentRunID = "writer", "member-run", "team-run"
		return run.AsMember(e)
	}
	started := log.AppendTo("team-run", team(&run.RunStarted{}))
	require.Equal(t, "TeamRunStarted", started.Name)
	require.Equal(t, "RunStarted", log.AppendTo("team-run", member(&run.RunStarted{})).Name)
	memberDone := log.AppendTo("team-run", member(&run.RunCompleted{Content: "draft"}))
	require.Equal(t, "RunCompleted", memberDone.Name)
	require.Contains(t, string(memberDone.Data), `"run_id":"member-run"`)
	require.Contains(t, string(memberDone.Data), `"event_index":2`)
	info, _ := log.Lookup("team-run")
	require.Equal(t, run.StatusRunning, info.Status, "a member's end does not end the team's stream")
	_, known := log.Lookup("member-run")
	require.False(t, known, "a member's events are the team's stream's")

	done := log.AppendTo("team-run", team(&run.RunCompleted{Content: "final"}))
	require.Equal(t, "TeamRunCompleted", done.Name)
	info, _ = log.Lookup("team-run")
	require.Equal(t, eventlog.Info{Status: run.StatusCompleted, Count: 4, LastIndex: 3}, info)
}
