package run

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Status is the lifecycle state of a run, as AgentOS names it on the wire.
type Status string

// The run statuses.
const (
	StatusPending     Status = "PENDING"
	StatusRunning     Status = "RUNNING"
	StatusCompleted   Status = "COMPLETED"
	StatusPaused      Status = "PAUSED"
	StatusCancelled   Status = "CANCELLED"
	StatusError       Status = "ERROR"
	StatusRegenerated Status = "REGENERATED"
)

// Statuses lists every [Status] in lifecycle order.
func Statuses() []Status {
	return []Status{StatusPending, StatusRunning, StatusCompleted, StatusPaused, StatusCancelled, StatusError, StatusRegenerated}
}

// HistorySkipStatuses lists the statuses whose runs never reach history or a
// model's context: a paused, cancelled, failed or replaced run says nothing the
// next turn should build on.
func HistorySkipStatuses() []Status {
	return []Status{StatusPaused, StatusCancelled, StatusError, StatusRegenerated}
}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool { return slices.Contains(Statuses(), s) }

// SkipsHistory reports whether runs in status s are left out of history and context.
func (s Status) SkipsHistory() bool { return slices.Contains(HistorySkipStatuses(), s) }

// Terminal reports whether a stream or a resume ends at s. PAUSED is terminal
// for a stream even though a continue can reopen the run.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusError, StatusCancelled, StatusPaused:
		return true
	}
	return false
}

// ParseStatus returns the [Status] named by text, or an error naming the valid values.
func ParseStatus(text string) (Status, error) {
	s := Status(text)
	if !s.Valid() {
		return "", fmt.Errorf("unknown run status %q: want one of %v", text, Statuses())
	}
	return s, nil
}

// UnmarshalJSON accepts only known statuses, so a corrupt row or request is
// reported instead of silently carrying an unknown state.
func (s *Status) UnmarshalJSON(data []byte) error {
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("run status: %w", err)
	}
	if text == "" {
		*s = ""
		return nil
	}
	parsed, err := ParseStatus(text)
	if err != nil {
		return err
	}
	*s = parsed
	return nil
}

// FinalStatus is the status a run's final event announces: RunCompleted,
// RunError, RunCancelled or RunPaused. Other events are not final.
func FinalStatus(e Event) (Status, bool) {
	switch e.(type) {
	case *RunCompleted:
		return StatusCompleted, true
	case *RunError:
		return StatusError, true
	case *RunCancelled:
		return StatusCancelled, true
	case *RunPaused:
		return StatusPaused, true
	}
	return "", false
}
