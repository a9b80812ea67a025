package tool

import (
	"context"
	"encoding/json"

	"github.com/agnogo/agnogo/run"
)

// Tool is something an agent's model can call.
type Tool interface {
	// Spec describes the tool: its name, its arguments' schema and how the
	// run loop must treat a call (confirmation, user input, …).
	Spec() Spec
	// Call runs the tool with the model's arguments (a JSON object) and
	// returns the text the model sees as the result. An error is reported to
	// the model as a failed tool call; it does not end the run.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// Spec describes a tool.
type Spec struct {
	// Name is what the model calls; unique within an agent.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Parameters is the JSON Schema of the arguments (an object schema).
	Parameters json.RawMessage
	// RequiresConfirmation pauses the run before each call until a person
	// confirms or rejects it.
	RequiresConfirmation bool
	// RequiresUserInput pauses the run until a person supplies the fields
	// of UserInputSchema.
	RequiresUserInput bool
	// UserInputSchema lists the fields a person must supply.
	UserInputSchema []run.UserInputField
	// ExternalExecution pauses the run: the caller executes the tool and
	// sends back its result.
	ExternalExecution bool
	// StopAfterToolCall ends the model loop after this tool's result, which
	// becomes the run's answer; a failed call does not end it.
	StopAfterToolCall bool
	// ShowResult shows the call's result to the user as run content (a
	// RunContent event, and the run's content before the model's answer),
	// as well as giving it to the model; a failed call is not shown.
	ShowResult bool
	// RequiresApproval makes each call wait for an admin's approval: the
	// paused call carries approval_type "required", and a server with an
	// approvals store records an approval that only a caller allowed to
	// resolve approvals can get past. Without RequiresUserInput or
	// ExternalExecution it implies RequiresConfirmation, which is then
	// what the approval decides.
	RequiresApproval bool
}

// ApprovalRequired is the approval_type of a call that waits for an
// admin's approval ([Spec.RequiresApproval]).
const ApprovalRequired = "required"

// withApprovalDefaults makes a spec that requires approval but no other
// pause require confirmation, the pause an approval decides.
func withApprovalDefaults(spec Spec) Spec {
	if spec.RequiresApproval && !spec.RequiresConfirmation && !spec.RequiresUserInput && !spec.ExternalExecution {
		spec.RequiresConfirmation = true
	}
	return spec
}
