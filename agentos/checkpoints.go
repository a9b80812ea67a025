package agentos

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agnogo/agnogo/run"
)

// Checkpoints (runtime.md §12) are the places a run can be continued from,
// derived from the stored run: each message marked as a checkpoint (the
// last tool result of a batch), the run's last checkpoint index, and the end
// of its messages. Nothing else is stored for them.

// checkpoint is one entry of a run's checkpoint list. MessageIndex counts
// messages kept: continuing from it keeps messages[:MessageIndex].
type checkpoint struct {
	CheckpointID   string  `json:"checkpoint_id"`
	RunID          string  `json:"run_id"`
	SessionID      string  `json:"session_id"`
	MessageIndex   int     `json:"message_index"`
	ContinueFrom   int     `json:"continue_from"`
	Status         string  `json:"status"`
	Reason         string  `json:"reason"`
	CreatedAt      int64   `json:"created_at"`
	MessageID      *string `json:"message_id"`
	MessageRole    *string `json:"message_role"`
	MessagePreview *string `json:"message_preview"`
	IsLatest       bool    `json:"is_latest"`
}

// Why a checkpoint entry exists.
const (
	reasonCheckpoint = "checkpoint"
	reasonEnd        = "end"
	reasonSnapshot   = "snapshot"
)

// maxPreview is how many characters of a message a checkpoint shows.
const maxPreview = 120

// checkpointAt describes the cut after message index (1-based; 0 is before
// the first message).
func checkpointAt(out *run.Output, index int, reason string) checkpoint {
	c := checkpoint{
		CheckpointID: strconv.Itoa(index),
		RunID:        out.RunID,
		SessionID:    out.SessionID,
		MessageIndex: index,
		ContinueFrom: index,
		Status:       string(out.Status),
		Reason:       reason,
		CreatedAt:    out.CreatedAt,
		IsLatest:     index == len(out.Messages),
	}
	if index < 1 || index > len(out.Messages) {
		return c
	}
	msg := out.Messages[index-1]
	if msg.CheckpointStatus != "" {
		c.Status = msg.CheckpointStatus
	}
	if msg.CheckpointCreatedAt != 0 {
		c.CreatedAt = msg.CheckpointCreatedAt
	}
	role := string(msg.Role)
	c.MessageID, c.MessageRole = &msg.ID, &role
	if msg.Content != nil {
		preview := preview(msg.ContentString())
		c.MessagePreview = &preview
	}
	return c
}

// preview flattens text to one line of at most maxPreview characters.
func preview(text string) string {
	text = strings.TrimSpace(strings.ReplaceAll(text, "\n", " "))
	if runes := []rune(text); len(runes) > maxPreview {
		return string(runes[:maxPreview-1]) + "..."
	}
	return text
}

// checkpoints lists a run's checkpoints in message order.
func checkpoints(out *run.Output) []checkpoint {
	byIndex := map[int]string{}
	if last := out.LastCheckpointAtMessageIndex; last != nil && *last >= 0 && *last <= len(out.Messages) {
		byIndex[*last] = reasonCheckpoint
	}
	for i, msg := range out.Messages {
		if msg.CheckpointStatus != "" {
			byIndex[i+1] = reasonCheckpoint
		}
	}
	if len(out.Messages) > 0 {
		byIndex[len(out.Messages)] = reasonEnd
	}
	list := make([]checkpoint, 0, len(byIndex))
	for index := 0; index <= len(out.Messages); index++ {
		if reason, ok := byIndex[index]; ok {
			list = append(list, checkpointAt(out, index, reason))
		}
	}
	return list
}

func (o *OS) handleListCheckpoints(w http.ResponseWriter, r *http.Request, runner run.Runner) {
	if !o.needStore(w) {
		return
	}
	out, ok := o.storedRun(w, r, runner)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run_id": out.RunID, "session_id": out.SessionID, "checkpoints": checkpoints(out)})
}

func (o *OS) handleGetCheckpoint(w http.ResponseWriter, r *http.Request, runner run.Runner) {
	if !o.needStore(w) {
		return
	}
	index, err := strconv.Atoi(r.PathValue("message_index"))
	if err != nil {
		writeValidation(w, validationIssue{Loc: []string{"path", "message_index"},
			Msg: "Input should be a valid integer, unable to parse string as an integer", Type: "int_parsing"})
		return
	}
	out, ok := o.storedRun(w, r, runner)
	if !ok {
		return
	}
	if index < 0 || index > len(out.Messages) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("message_index must be between 0 and %d", len(out.Messages)))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"checkpoint": checkpointAt(out, index, reasonSnapshot),
		"snapshot":   runSchema(out.Snapshot(index)),
	})
}
