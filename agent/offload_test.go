package agent_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

func bigLog(t *testing.T) tool.Tool {
	logs, err := tool.New(tool.Config{Name: "fetch_logs"}, func(ctx context.Context, _ struct{}) (string, error) {
		var b strings.Builder
		for i := range 5000 {
			if i == 4321 {
				b.WriteString("ERROR disk full on /var\n")
				continue
			}
			b.WriteString("INFO all good, nothing to see here\n")
		}
		return b.String(), nil
	})
	require.NoError(t, err)
	return logs
}

var resultIDPattern = regexp.MustCompile(`id="(res_[0-9a-f]+)"`)

// lastToolResult returns the content of the last tool message sent.
func lastToolResult(req *model.Request) string {
	return req.Messages[len(req.Messages)-1].ContentString()
}

func TestLargeToolResultsAreOffloaded(t *testing.T) {
	var envelope, found string
	b := setup(t, []scripted.Reply{
		scripted.ToolCall("fetch_logs", `{}`),
		scripted.Respond(func(req *model.Request) scripted.Reply {
			envelope = lastToolResult(req)
			id := resultIDPattern.FindStringSubmatch(envelope)[1]
			return scripted.ToolCall("search_result", `{"result_id":"`+id+`","pattern":"ERROR"}`)
		}),
		scripted.Respond(func(req *model.Request) scripted.Reply {
			found = lastToolResult(req)
			return scripted.Text("The disk is full.")
		}),
	}, func(c *agent.Config) {
		c.Tools = []tool.Tool{bigLog(t)}
		c.OffloadToolResults = true
	})
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "why did it fail?", SessionID: "s1", UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)

	require.Less(t, len(envelope), 2500, "the model sees an envelope, not 175 KB")
	require.Contains(t, envelope, "lines=5001")
	require.Contains(t, envelope, "INFO all good", "with a preview of the head")
	require.Contains(t, envelope, "read_result(")
	require.Contains(t, found, ">4321: ERROR disk full on /var")

	names := []string{}
	for _, def := range b.model.Requests()[0].Tools {
		names = append(names, def.Name)
	}
	require.ElementsMatch(t, []string{"fetch_logs", "read_result", "search_result"}, names)
	require.Less(t, len(*out.Tools[0].Result), 2500, "the stored run keeps the envelope too")
}

func TestOffloadedResultsReadByPage(t *testing.T) {
	var page string
	b := setup(t, []scripted.Reply{
		scripted.ToolCall("fetch_logs", `{}`),
		scripted.Respond(func(req *model.Request) scripted.Reply {
			id := resultIDPattern.FindStringSubmatch(lastToolResult(req))[1]
			return scripted.ToolCall("read_result", `{"result_id":"`+id+`","offset":4320,"limit":3}`)
		}),
		scripted.Respond(func(req *model.Request) scripted.Reply {
			page = lastToolResult(req)
			return scripted.Text("ok")
		}),
	}, func(c *agent.Config) {
		c.Tools = []tool.Tool{bigLog(t)}
		c.OffloadToolResults = true
	})
	_, err := b.agent.Run(t.Context(), &run.Input{InputContent: "read", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "[lines 4320-4322 of 5001]\nINFO all good, nothing to see here\nERROR disk full on /var\nINFO all good, nothing to see here\n", page)
}

func TestOffloadNeedsAStore(t *testing.T) {
	_, err := agent.New(agent.Config{Model: scripted.New(nil), OffloadToolResults: true})
	require.ErrorContains(t, err, "needs a Store")
}
