package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// buildMessages assembles what the model sees first: the instructions, the
// history of the session, and the input.
func (a *Agent) buildMessages(ctx context.Context, st *runState, in *run.Input) error {
	now := a.cfg.Now()
	system := a.systemMessage(st.schema)
	if a.cfg.AddMemoriesToContext && a.cfg.Store != nil && st.out.UserID != "" {
		memories, err := a.userMemories(ctx, st.out.UserID)
		if err != nil {
			return err
		}
		if len(memories) > 0 {
			system = strings.TrimLeft(system+"\n\n"+memoriesPrompt(memories), "\n")
		}
	}
	if system != "" {
		st.messages = append(st.messages, a.newMessage(run.RoleSystem, system, now))
	}
	// A session not stored yet has no history to read.
	if a.cfg.AddHistoryToContext && a.cfg.Store != nil && st.session.CreatedAt != 0 {
		history, err := a.history(ctx, st.r, st.out)
		if err != nil {
			return err
		}
		st.messages = append(st.messages, history...)
	}
	user := a.newMessage(run.RoleUser, in.InputContent, now)
	user.Images, user.Audio, user.Videos, user.Files = in.Images, in.Audios, in.Videos, in.Files
	st.messages = append(st.messages, user)
	return nil
}

func (a *Agent) systemMessage(schema *OutputSchema) string {
	system := a.cfg.Instructions
	if schema != nil {
		if system != "" {
			system += "\n\n"
		}
		system += fmt.Sprintf("Answer with a single JSON object that matches this JSON Schema (%s):\n%s", schema.Name, schema.Schema)
	}
	return system
}

// history returns copies of the messages of the runs that make out's
// history (storage.HistoryQuery: the last finished runs before it on its
// branch of the session), flagged from_history. System messages and the
// earlier runs' own history are left out; the run itself never is part of
// it, even when an earlier attempt stored it (the history ends before it).
func (a *Agent) history(ctx context.Context, r *runhost.Run, out *run.Output) ([]*run.Message, error) {
	q := storage.HistoryQuery{
		SessionID: out.SessionID, UserID: out.UserID, RunID: out.RunID, ForkedFromRunID: out.ForkedFromRunID, N: a.cfg.NumHistoryRuns,
	}
	var runs []*run.Output
	var err error
	if r != nil {
		runs, err = r.History(ctx, q) // a new run: the host may hold it
	} else {
		runs, err = runhost.Read(ctx, a.host, "history", q.SessionID, func(ctx context.Context) ([]*run.Output, error) {
			return a.cfg.Store.HistoryRuns(ctx, q)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("load history of session %s: %w", out.SessionID, err)
	}
	var history []*run.Message
	for _, past := range runs {
		for _, msg := range past.Messages {
			if msg.Role == run.RoleSystem || msg.Role == run.RoleDeveloper || msg.FromHistory {
				continue
			}
			copied := *msg
			copied.FromHistory = true
			history = append(history, &copied)
		}
	}
	return history, nil
}

func (a *Agent) newMessage(role string, content any, now interface{ Unix() int64 }) *run.Message {
	return &run.Message{ID: a.cfg.NewID(), Role: role, Content: content, CreatedAt: now.Unix()}
}
