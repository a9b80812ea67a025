package run

// The events of a team's tasks mode (Agno's TeamRunEvent task events). They
// are team events only: their names carry the Team prefix already.

// TaskData is one task of a team's task list as the task events show it.
type TaskData struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Description  string   `json:"description,omitempty"`
	Status       string   `json:"status"`
	Assignee     string   `json:"assignee,omitempty"`
	Dependencies []string `json:"dependencies"`
	Result       *string  `json:"result,omitempty"`
}

// TeamTaskIterationStarted opens an iteration of the tasks mode's loop.
type TeamTaskIterationStarted struct {
	BaseEvent
	Iteration     int `json:"iteration"`
	MaxIterations int `json:"max_iterations"`
}

// EventName returns [EventTeamTaskIterationStarted].
func (TeamTaskIterationStarted) EventName() string { return EventTeamTaskIterationStarted }

// MarshalJSON writes the event with its name set.
func (e TeamTaskIterationStarted) MarshalJSON() ([]byte, error) {
	type wire TeamTaskIterationStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// TeamTaskIterationCompleted closes an iteration, with the task list's
// summary.
type TeamTaskIterationCompleted struct {
	BaseEvent
	Iteration     int    `json:"iteration"`
	MaxIterations int    `json:"max_iterations"`
	TaskSummary   string `json:"task_summary,omitempty"`
}

// EventName returns [EventTeamTaskIterationCompleted].
func (TeamTaskIterationCompleted) EventName() string { return EventTeamTaskIterationCompleted }

// MarshalJSON writes the event with its name set.
func (e TeamTaskIterationCompleted) MarshalJSON() ([]byte, error) {
	type wire TeamTaskIterationCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// TeamTaskStateUpdated shows the whole task list after an iteration.
type TeamTaskStateUpdated struct {
	BaseEvent
	TaskSummary       string     `json:"task_summary,omitempty"`
	GoalComplete      bool       `json:"goal_complete"`
	Tasks             []TaskData `json:"tasks"`
	CompletionSummary string     `json:"completion_summary,omitempty"`
}

// EventName returns [EventTeamTaskStateUpdated].
func (TeamTaskStateUpdated) EventName() string { return EventTeamTaskStateUpdated }

// MarshalJSON writes the event with its name set.
func (e TeamTaskStateUpdated) MarshalJSON() ([]byte, error) {
	type wire TeamTaskStateUpdated
	index := e.stamp(e.EventName())
	if e.Tasks == nil {
		e.Tasks = []TaskData{}
	}
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// TeamTaskCreated announces a new task.
type TeamTaskCreated struct {
	BaseEvent
	TaskID       string   `json:"task_id"`
	Title        string   `json:"title"`
	Description  string   `json:"description,omitempty"`
	Assignee     string   `json:"assignee,omitempty"`
	Status       string   `json:"status"`
	Dependencies []string `json:"dependencies"`
}

// EventName returns [EventTeamTaskCreated].
func (TeamTaskCreated) EventName() string { return EventTeamTaskCreated }

// MarshalJSON writes the event with its name set.
func (e TeamTaskCreated) MarshalJSON() ([]byte, error) {
	type wire TeamTaskCreated
	index := e.stamp(e.EventName())
	if e.Dependencies == nil {
		e.Dependencies = []string{}
	}
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// TeamTaskUpdated announces a task's new status.
type TeamTaskUpdated struct {
	BaseEvent
	TaskID         string  `json:"task_id"`
	Title          string  `json:"title"`
	Status         string  `json:"status"`
	PreviousStatus string  `json:"previous_status,omitempty"`
	Result         *string `json:"result,omitempty"`
	Assignee       string  `json:"assignee,omitempty"`
}

// EventName returns [EventTeamTaskUpdated].
func (TeamTaskUpdated) EventName() string { return EventTeamTaskUpdated }

// MarshalJSON writes the event with its name set.
func (e TeamTaskUpdated) MarshalJSON() ([]byte, error) {
	type wire TeamTaskUpdated
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}
