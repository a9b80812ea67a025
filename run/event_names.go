package run

import (
	"encoding/json"
	"strings"
)

// Agent event names (Agno's RunEvent), each the wire name of the event type of
// the same name in this package.
const (
	EventRunStarted                   = "RunStarted"
	EventRunContent                   = "RunContent"
	EventRunContentCompleted          = "RunContentCompleted"
	EventRunIntermediateContent       = "RunIntermediateContent"
	EventRunCompleted                 = "RunCompleted"
	EventRunError                     = "RunError"
	EventRunCancelled                 = "RunCancelled"
	EventRunPaused                    = "RunPaused"
	EventRunContinued                 = "RunContinued"
	EventPreHookStarted               = "PreHookStarted"
	EventPreHookCompleted             = "PreHookCompleted"
	EventPostHookStarted              = "PostHookStarted"
	EventPostHookCompleted            = "PostHookCompleted"
	EventToolCallStarted              = "ToolCallStarted"
	EventToolCallCompleted            = "ToolCallCompleted"
	EventToolCallError                = "ToolCallError"
	EventReasoningStarted             = "ReasoningStarted"
	EventReasoningStep                = "ReasoningStep"
	EventReasoningContentDelta        = "ReasoningContentDelta"
	EventReasoningCompleted           = "ReasoningCompleted"
	EventMemoryUpdateStarted          = "MemoryUpdateStarted"
	EventMemoryUpdateCompleted        = "MemoryUpdateCompleted"
	EventSessionSummaryStarted        = "SessionSummaryStarted"
	EventSessionSummaryCompleted      = "SessionSummaryCompleted"
	EventParserModelResponseStarted   = "ParserModelResponseStarted"
	EventParserModelResponseCompleted = "ParserModelResponseCompleted"
	EventOutputModelResponseStarted   = "OutputModelResponseStarted"
	EventOutputModelResponseCompleted = "OutputModelResponseCompleted"
	EventModelRequestStarted          = "ModelRequestStarted"
	EventModelRequestCompleted        = "ModelRequestCompleted"
	EventCompressionStarted           = "CompressionStarted"
	EventCompressionCompleted         = "CompressionCompleted"
	EventFollowupsStarted             = "FollowupsStarted"
	EventFollowupsCompleted           = "FollowupsCompleted"
	// EventCustom is shared by agents, teams and workflows.
	EventCustom = "CustomEvent"
	// EventRunRetry is agnogo's retry notice (not in Agno): a run is about to be
	// attempted again.
	EventRunRetry = "RunRetry"
)

// Team event names (Agno's TeamRunEvent): the agent names with a Team prefix,
// plus the task events. Teams share [EventCustom].
const (
	EventTeamRunStarted                   = "TeamRunStarted"
	EventTeamRunContent                   = "TeamRunContent"
	EventTeamRunIntermediateContent       = "TeamRunIntermediateContent"
	EventTeamRunContentCompleted          = "TeamRunContentCompleted"
	EventTeamRunCompleted                 = "TeamRunCompleted"
	EventTeamRunError                     = "TeamRunError"
	EventTeamRunCancelled                 = "TeamRunCancelled"
	EventTeamRunPaused                    = "TeamRunPaused"
	EventTeamRunContinued                 = "TeamRunContinued"
	EventTeamPreHookStarted               = "TeamPreHookStarted"
	EventTeamPreHookCompleted             = "TeamPreHookCompleted"
	EventTeamPostHookStarted              = "TeamPostHookStarted"
	EventTeamPostHookCompleted            = "TeamPostHookCompleted"
	EventTeamToolCallStarted              = "TeamToolCallStarted"
	EventTeamToolCallCompleted            = "TeamToolCallCompleted"
	EventTeamToolCallError                = "TeamToolCallError"
	EventTeamReasoningStarted             = "TeamReasoningStarted"
	EventTeamReasoningStep                = "TeamReasoningStep"
	EventTeamReasoningContentDelta        = "TeamReasoningContentDelta"
	EventTeamReasoningCompleted           = "TeamReasoningCompleted"
	EventTeamMemoryUpdateStarted          = "TeamMemoryUpdateStarted"
	EventTeamMemoryUpdateCompleted        = "TeamMemoryUpdateCompleted"
	EventTeamSessionSummaryStarted        = "TeamSessionSummaryStarted"
	EventTeamSessionSummaryCompleted      = "TeamSessionSummaryCompleted"
	EventTeamParserModelResponseStarted   = "TeamParserModelResponseStarted"
	EventTeamParserModelResponseCompleted = "TeamParserModelResponseCompleted"
	EventTeamOutputModelResponseStarted   = "TeamOutputModelResponseStarted"
	EventTeamOutputModelResponseCompleted = "TeamOutputModelResponseCompleted"
	EventTeamModelRequestStarted          = "TeamModelRequestStarted"
	EventTeamModelRequestCompleted        = "TeamModelRequestCompleted"
	EventTeamCompressionStarted           = "TeamCompressionStarted"
	EventTeamCompressionCompleted         = "TeamCompressionCompleted"
	EventTeamFollowupsStarted             = "TeamFollowupsStarted"
	EventTeamFollowupsCompleted           = "TeamFollowupsCompleted"
	EventTeamTaskIterationStarted         = "TeamTaskIterationStarted"
	EventTeamTaskIterationCompleted       = "TeamTaskIterationCompleted"
	EventTeamTaskStateUpdated             = "TeamTaskStateUpdated"
	EventTeamTaskCreated                  = "TeamTaskCreated"
	EventTeamTaskUpdated                  = "TeamTaskUpdated"
	// EventTeamRunRetry is agnogo's retry notice for teams.
	EventTeamRunRetry = "TeamRunRetry"
)

// Workflow event names (Agno's WorkflowRunEvent). Workflows share [EventCustom].
const (
	EventWorkflowStarted             = "WorkflowStarted"
	EventWorkflowCompleted           = "WorkflowCompleted"
	EventWorkflowPaused              = "WorkflowPaused"
	EventWorkflowCancelled           = "WorkflowCancelled"
	EventWorkflowError               = "WorkflowError"
	EventWorkflowAgentStarted        = "WorkflowAgentStarted"
	EventWorkflowAgentCompleted      = "WorkflowAgentCompleted"
	EventStepStarted                 = "StepStarted"
	EventStepCompleted               = "StepCompleted"
	EventStepPaused                  = "StepPaused"
	EventStepContinued               = "StepContinued"
	EventStepExecutorPaused          = "StepExecutorPaused"
	EventStepExecutorContinued       = "StepExecutorContinued"
	EventStepOutputReview            = "StepOutputReview"
	EventStepError                   = "StepError"
	EventLoopExecutionStarted        = "LoopExecutionStarted"
	EventLoopIterationStarted        = "LoopIterationStarted"
	EventLoopIterationCompleted      = "LoopIterationCompleted"
	EventLoopExecutionCompleted      = "LoopExecutionCompleted"
	EventParallelExecutionStarted    = "ParallelExecutionStarted"
	EventParallelExecutionCompleted  = "ParallelExecutionCompleted"
	EventConditionExecutionStarted   = "ConditionExecutionStarted"
	EventConditionExecutionCompleted = "ConditionExecutionCompleted"
	EventConditionPaused             = "ConditionPaused"
	EventRouterExecutionStarted      = "RouterExecutionStarted"
	EventRouterExecutionCompleted    = "RouterExecutionCompleted"
	EventRouterPaused                = "RouterPaused"
	EventStepsExecutionStarted       = "StepsExecutionStarted"
	EventStepsExecutionCompleted     = "StepsExecutionCompleted"
	EventStepOutput                  = "StepOutput"
)

// TeamEventName returns the team counterpart of an agent event name, e.g.
// "RunContent" → "TeamRunContent". [EventCustom] is shared and returned as is.
func TeamEventName(agentEvent string) string {
	if agentEvent == EventCustom || strings.HasPrefix(agentEvent, teamPrefix) {
		return agentEvent
	}
	return teamPrefix + agentEvent
}

// teamPrefix starts every team event name.
const teamPrefix = "Team"

// workflowNames maps the run events a workflow emits for its own run to
// their Workflow* names (Agno's WorkflowRunEvent). A continued workflow
// opens its stream as a started one does.
var workflowNames = map[string]string{
	EventRunStarted:   EventWorkflowStarted,
	EventRunContinued: EventWorkflowStarted,
	EventRunCompleted: EventWorkflowCompleted,
	EventRunError:     EventWorkflowError,
	EventRunCancelled: EventWorkflowCancelled,
	EventRunPaused:    EventWorkflowPaused,
}

// WorkflowEventName returns the workflow counterpart of a run event name,
// e.g. "RunCompleted" → "WorkflowCompleted"; any other name (the step
// events, [EventCustom]) is returned as is.
func WorkflowEventName(runEvent string) string {
	if name, ok := workflowNames[runEvent]; ok {
		return name
	}
	return runEvent
}

// FinalEventName reports whether an event of this name is a final event —
// it ends its run, or pauses it: RunCompleted, RunError, RunCancelled,
// RunPaused and their team and workflow counterparts. In a team's stream a
// member's final event ends only the member's run: see [EndsRun].
func FinalEventName(name string) bool {
	switch strings.TrimPrefix(name, teamPrefix) {
	case EventRunCompleted, EventRunError, EventRunCancelled, EventRunPaused,
		EventWorkflowCompleted, EventWorkflowError, EventWorkflowCancelled, EventWorkflowPaused:
		return true
	}
	return false
}

// EndsRun reports whether an encoded event of a run's stream, of this
// name, is the run's own final event: a final name ([FinalEventName]) and
// the run's id, not that of a member run passed on in the stream.
func EndsRun(runID, name string, data []byte) bool {
	if !FinalEventName(name) {
		return false
	}
	var ids struct {
		RunID string `json:"run_id"`
	}
	if json.Unmarshal(data, &ids) != nil {
		return true
	}
	return ids.RunID == "" || ids.RunID == runID
}
