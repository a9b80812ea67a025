package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
)

var (
	// ErrUnknownTool is wrapped by the error of a call naming a tool the
	// agent does not have.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrToolCallLimit is wrapped by the error of a call refused because the
	// run reached its tool_call_limit.
	ErrToolCallLimit = errors.New("tool call limit reached")
)

// ArgumentError reports arguments that do not fit a tool's parameters
// schema: invalid JSON, a wrong type, a missing required property or an
// unknown one. The tool's function was not called. The message is written
// for the model, which can fix its arguments and call again.
type ArgumentError struct {
	// Tool is the tool's name.
	Tool string
	// Reason says what was wrong.
	Reason string
	// Err is the underlying JSON or schema error, if any.
	Err error
}

// Error implements error.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %s: %s", e.Tool, e.Reason)
}

// Unwrap returns the underlying JSON or schema error.
func (e *ArgumentError) Unwrap() error { return e.Err }

// PanicError reports a tool function that panicked. The panic is recovered so
// that one faulty tool fails its call without crashing the run.
type PanicError struct {
	// Tool is the tool's name.
	Tool string
	// Value is what the function panicked with.
	Value any
	// Stack is the goroutine's stack at the panic, for logs; it is not part
	// of the message the model sees.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %s panicked: %v", e.Tool, e.Value)
}

// recoverPanic turns a panic into a [*PanicError] in *errp. It must be
// deferred directly.
func recoverPanic(name string, errp *error) {
	if value := recover(); value != nil {
		*errp = &PanicError{Tool: name, Value: value, Stack: debug.Stack()}
	}
}

// validationPath matches the "validating /properties/x: " prefixes
// jsonschema-go puts on nested errors.
var validationPath = regexp.MustCompile(`validating (/[^:]*): `)

// describeValidationError rewrites a jsonschema-go error for the model:
// "validating root: validating /properties/n: type: …" becomes
// `property "n": type: …`.
func describeValidationError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "validating root: ")
	var where string
	msg = validationPath.ReplaceAllStringFunc(msg, func(match string) string {
		pointer := validationPath.FindStringSubmatch(match)[1]
		where = pointer
		return ""
	})
	if where == "" {
		return msg
	}
	return fmt.Sprintf("property %q: %s", propertyPath(where), msg)
}

// propertyPath turns a schema pointer such as /properties/a/items/properties/b
// into a.b, the argument the model has to fix.
func propertyPath(pointer string) string {
	var parts []string
	segments := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	for i := 0; i < len(segments); i++ {
		switch segments[i] {
		case "properties", "patternProperties":
			if i+1 < len(segments) {
				parts = append(parts, segments[i+1])
				i++
			}
		case "items", "prefixItems", "additionalProperties":
			parts = append(parts, "[]")
		}
	}
	if len(parts) == 0 {
		return pointer
	}
	return strings.ReplaceAll(strings.Join(parts, "."), ".[]", "[]")
}

// normalizeArgs reads an empty or null argument string as an empty object.
func normalizeArgs(args json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}")
	}
	return args
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// compactJSON returns data without insignificant white space.
func compactJSON(data []byte) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
