package run

// NextAction is what a reasoning step decided to do next.
type NextAction string

// The reasoning next actions.
const (
	NextActionContinue    NextAction = "continue"
	NextActionValidate    NextAction = "validate"
	NextActionFinalAnswer NextAction = "final_answer"
	NextActionReset       NextAction = "reset"
)

// ReasoningStepData is one step of a model's structured reasoning (Agno's
// reasoning.step.ReasoningStep; the name [ReasoningStep] belongs to the event).
// Agno dumps every key, so unset fields are written as null.
type ReasoningStepData struct {
	Title      *string     `json:"title"`
	Action     *string     `json:"action"`
	Result     *string     `json:"result"`
	Reasoning  *string     `json:"reasoning"`
	NextAction *NextAction `json:"next_action"`
	// Confidence is between 0 and 1.
	Confidence *float64 `json:"confidence"`
}
