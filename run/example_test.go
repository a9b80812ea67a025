package run_test

import (
	"encoding/json"
	"fmt"

	"github.com/agnogo/agnogo/run"
)

func ExampleDecodeEvent() {
	frame := []byte(`{"created_at":1767000000,"event":"RunContent","agent_id":"a","run_id":"r1","session_id":"s1","content":"Hel","content_type":"str","event_index":3}`)
	event, err := run.DecodeEvent(frame)
	if err != nil {
		panic(err)
	}
	if content, ok := event.(*run.RunContent); ok {
		index, _ := content.Index()
		fmt.Printf("%s %q at index %d\n", content.EventName(), content.Content, index)
	}

	team, _ := run.DecodeEvent([]byte(`{"event":"TeamRunStarted","team_id":"t1"}`))
	fmt.Printf("%T %s\n", team, team.EventName())
	// Output:
	// RunContent "Hel" at index 3
	// *run.GenericEvent TeamRunStarted
}

func ExampleRunContent() {
	data, _ := json.Marshal(&run.RunContent{BaseEvent: run.BaseEvent{RunID: "r1"}, Content: "Hel", ContentType: "str"})
	fmt.Println(string(data))
	// Output:
	// {"created_at":0,"event":"RunContent","run_id":"r1","nested_depth":0,"content":"Hel","workflow_agent":false,"content_type":"str"}
}

func ExampleSessionMetrics_AccumulateFromRun() {
	cost := 0.01
	runMetrics := &run.RunMetrics{
		Metrics: run.Metrics{InputTokens: 100, OutputTokens: 20, TotalTokens: 120, Cost: &cost},
		Details: map[string][]run.ModelMetrics{
			run.ModelTypeModel: {{Metrics: run.Metrics{InputTokens: 100, OutputTokens: 20, TotalTokens: 120}, Provider: "Anthropic", ID: "claude-sonnet-4-5"}},
		},
	}
	var session run.SessionMetrics
	session.AccumulateFromRun(runMetrics)
	session.AccumulateFromRun(runMetrics)

	data, _ := json.Marshal(session)
	fmt.Println(string(data))
	// Output:
	// {"input_tokens":200,"output_tokens":40,"total_tokens":240,"cost":0.02,"details":{"model":[{"input_tokens":200,"output_tokens":40,"total_tokens":240,"id":"claude-sonnet-4-5","provider":"Anthropic"}]}}
}

func ExampleOutput_AppendAttempt() {
	out := &run.Output{RunID: "r1"}
	failure := "provider overloaded"
	_ = out.AppendAttempt(run.Attempt{Attempt: 1, Error: &failure, StartedAt: 100, EndedAt: 102})
	_ = out.AppendAttempt(run.Attempt{Attempt: 2, StartedAt: 104, EndedAt: 110})

	data, _ := json.Marshal(out.Metadata)
	fmt.Println(string(data))
	// Output:
	// {"attempts":[{"attempt":1,"error":"provider overloaded","started_at":100,"ended_at":102},{"attempt":2,"error":null,"started_at":104,"ended_at":110}]}
}

func ExampleRequirement_Confirm() {
	tool := &run.ToolExecution{ToolCallID: "call-1", ToolName: "delete_file", RequiresConfirmation: true}
	out := &run.Output{Tools: []*run.ToolExecution{tool}, Requirements: []*run.Requirement{{ID: "req-1", ToolExecution: tool}}}

	fmt.Println(out.Requirements[0].PauseType(), len(out.ActiveRequirements()))
	if err := out.Requirements[0].Confirm(); err != nil {
		panic(err)
	}
	fmt.Println(*out.Tools[0].Confirmed, len(out.ActiveRequirements()))
	// Output:
	// confirmation 1
	// true 0
}
