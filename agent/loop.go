package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
)

// errPaused ends the model loop when a tool waits for a person.
var errPaused = runhost.ErrPaused

// Iterations runs a run's model loop in iterations (see
// [Config.Iterations]). Its methods are called from the goroutine running
// the attempt; they emit their events through r. What they decide must
// depend only on the run (its tool calls and their results), so a run
// executed again from its journal iterates as it did.
type Iterations interface {
	// Start is called as iteration n (from 1) of a run begins.
	Start(ctx context.Context, r *runhost.Run, n int)
	// Next is called when iteration n ends with an answer: it returns the
	// user message that starts iteration n+1, or false to end the run
	// with that answer.
	Next(ctx context.Context, r *runhost.Run, n int) (message string, more bool)
}

// Attempt implements [runhost.Turn]: one attempt of the model loop.
func (st *runState) Attempt(ctx context.Context, r *runhost.Run, attempt int) error {
	st.r = r
	if st.answered {
		return nil
	}
	if attempt == 1 {
		st.baseMessages, st.baseTools = len(st.messages), len(st.out.Tools)
	}
	return st.a.modelLoop(st.a.withUser(ctx, st.out.UserID), st)
}

// Retry implements [runhost.Retrier]: each retry starts again from the
// messages the run began with.
func (st *runState) Retry() {
	st.messages = st.messages[:st.baseMessages]
	st.out.Tools = st.out.Tools[:st.baseTools]
	st.iteration = 0
}

// retryable reports whether a failed attempt is tried again: a failure
// whose class run's taxonomy calls retryable (see [model.IsRetryable],
// which also classifies a provider call's timeouts and connection
// failures). A failure of unknown kind is not. The run host retries only
// while the run's context lives.
func retryable(err error) bool {
	return model.IsRetryable(err)
}

// modelLoop calls the model, runs the tools it asks for, and repeats until
// it answers without tool calls, a tool stops the loop, or a tool pauses it.
func (a *Agent) modelLoop(ctx context.Context, st *runState) error {
	iterations := a.cfg.Iterations
	if iterations != nil && st.iteration == 0 {
		st.iteration = 1
		iterations.Start(ctx, st.r, st.iteration)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		resp, err := a.callModel(ctx, st)
		if err != nil {
			return err
		}
		assistant := a.newMessage(run.RoleAssistant, resp.Content, a.cfg.Now())
		assistant.ToolCalls = resp.ToolCalls
		assistant.ReasoningContent = resp.ReasoningContent
		assistant.ProviderData = resp.ProviderData
		st.messages = append(st.messages, assistant)
		if len(resp.ToolCalls) == 0 {
			st.out.Content = withShownResults(st, resp.Content)
			st.out.ReasoningContent = resp.ReasoningContent
			if iterations == nil {
				return nil
			}
			message, more := iterations.Next(ctx, st.r, st.iteration)
			if !more {
				return nil
			}
			st.messages = append(st.messages, a.newMessage(run.RoleUser, message, a.cfg.Now()))
			st.iteration++
			iterations.Start(ctx, st.r, st.iteration)
			continue
		}
		stop, err := a.runTools(ctx, st, resp.ToolCalls)
		if err != nil {
			return err
		}
		if stop {
			// The run's answer is what the stopping calls returned (a team
			// that responds directly answers with its member's answer).
			st.out.Content = stoppedWith(st.batch)
			return nil
		}
	}
}

// stoppedWith is the answer of a run a tool call stopped: the results of
// the batch's calls that stop the loop, in call order, one per line.
func stoppedWith(batch []*run.ToolExecution) string {
	var results []string
	for _, t := range batch {
		if t.StopAfterToolCall && !failedCall(t) && t.Result != nil {
			results = append(results, *t.Result)
		}
	}
	return strings.Join(results, "\n")
}

// callModel sends the conversation to the model, streaming deltas to the
// consumer when there is one, and records the usage. Under a journal the
// call is one step: a call that completed before a crash is not repeated.
func (a *Agent) callModel(ctx context.Context, st *runState) (*model.Response, error) {
	// Stored media are read back for this call only: the request holds the
	// bytes, st.messages keeps the references.
	messages, err := a.modelMessages(ctx, st.messages)
	if err != nil {
		return nil, err
	}
	req := &model.Request{Messages: messages, Tools: st.p.toolDefs}
	resp, err := a.sendModelCall(ctx, st, req)
	if err != nil {
		return nil, err
	}
	st.out.Metrics.AddModelUsage(run.ModelTypeModel, a.usage(st, resp))
	return resp, nil
}

// usage is a reply's usage with its cost, from the provider or the price
// table.
func (a *Agent) usage(st *runState, resp *model.Response) run.ModelMetrics {
	usage := run.ModelMetrics{Metrics: resp.Usage, ID: st.p.info.ID, Provider: st.p.info.Provider}
	if usage.Cost == nil {
		usage.Cost = a.cfg.Prices.cost(st.p.info.ID, resp.Usage)
	}
	return usage
}

// lastText is the text of the last message sent to the model, for its
// span's input.
func lastText(messages []*run.Message) string {
	if len(messages) == 0 {
		return ""
	}
	text, _ := messages[len(messages)-1].Content.(string)
	return text
}

// sendModelCall makes the model call: one journal step under a journal,
// else the call itself.
func (a *Agent) sendModelCall(ctx context.Context, st *runState, req *model.Request) (*model.Response, error) {
	if schema := st.schema; schema != nil {
		req.ResponseFormat = &model.ResponseFormat{Name: schema.Name, Schema: schema.Schema, Strict: schema.strict}
	}
	if journal, ok := run.JournalFrom(ctx); ok {
		return a.journaledModelCall(ctx, journal, st, req)
	}
	return a.modelCall(ctx, st, req)
}

// modelCall makes one model call, observed as an LLM span (a call a
// journal replays is not made again, and has none).
func (a *Agent) modelCall(ctx context.Context, st *runState, req *model.Request) (*model.Response, error) {
	ctx, span := observe.StartModel(ctx, st.p.info.Provider, st.p.info.ID, lastText(req.Messages))
	resp, err := a.sendToModel(ctx, st, req)
	if err != nil {
		span.EndModel("", nil, err)
		return nil, err
	}
	usage := a.usage(st, resp)
	span.EndModel(resp.Content, &usage.Metrics, nil)
	return resp, nil
}

// sendToModel sends the request, streaming the reply's deltas when someone
// listens.
func (a *Agent) sendToModel(ctx context.Context, st *runState, req *model.Request) (*model.Response, error) {
	if !st.r.Streaming() {
		resp, err := a.cfg.Model.Invoke(ctx, req)
		if err != nil {
			return nil, err
		}
		st.out.Metrics.SetTimeToFirstToken(a.cfg.Now())
		return resp, nil
	}
	for chunk, err := range a.cfg.Model.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		if chunk.Response != nil {
			return chunk.Response, nil
		}
		if chunk.ContentDelta != "" || chunk.ReasoningDelta != "" {
			st.out.Metrics.SetTimeToFirstToken(a.cfg.Now())
			content := &run.RunContent{ReasoningContent: chunk.ReasoningDelta, ContentType: st.contentType()}
			if chunk.ContentDelta != "" {
				content.Content = chunk.ContentDelta
			}
			if !st.r.Emit(content) {
				return nil, context.Canceled
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s: the stream ended without a final reply", st.p.info.Provider)
}

// journaledStep is a model call as a journal records it: the reply, or the
// error with its class, so a replayed failure is retried (or not) as the
// original was.
type journaledStep struct {
	Response *model.Response `json:"response,omitempty"`
	Error    *model.Error    `json:"error,omitempty"`
	Message  string          `json:"message,omitempty"`
}

// journaledModelCall makes the model call as a journal step.
func (a *Agent) journaledModelCall(ctx context.Context, journal run.Journal, st *runState, req *model.Request) (*model.Response, error) {
	data, err := journal.Step(ctx, "model", func(ctx context.Context) ([]byte, error) {
		resp, err := a.modelCall(ctx, st, req)
		var record journaledStep
		var classified *model.Error
		switch {
		case err == nil:
			record.Response = resp
		case ctx.Err() != nil:
			return nil, err // cancelled: nothing to record, the step did not finish
		case errors.As(err, &classified):
			copied := *classified
			copied.Err = nil
			record.Error = &copied
		default:
			record.Message = err.Error()
		}
		return json.Marshal(record)
	})
	if err != nil {
		return nil, err
	}
	var record journaledStep
	if err := json.Unmarshal(data, &record); err != nil {
		return nil, fmt.Errorf("journaled model call: %w", err)
	}
	switch {
	case record.Error != nil:
		return nil, record.Error
	case record.Message != "":
		return nil, errors.New(record.Message)
	case record.Response == nil:
		return nil, errors.New("journaled model call: no reply recorded")
	}
	return record.Response, nil
}

// contentType names what the run answers: its schema's name, or "str".
func (st *runState) contentType() string {
	if st.schema != nil {
		return st.schema.Name
	}
	return "str"
}
