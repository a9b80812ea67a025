package agent

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// OutputSchema is the shape of a structured answer: a JSON Schema and the name
// the answer's content_type takes.
type OutputSchema struct {
	// Name labels the answer (content_type) and the schema sent to the
	// provider.
	Name string
	// Schema is the JSON Schema (an object schema).
	Schema json.RawMessage

	resolved *jsonschema.Resolved
	// strict records that the schema meets the providers' strict mode rules
	// (every object closed, every property required), so it can be enforced
	// natively; other schemas are sent as guidance and validated here.
	strict bool
}

// SchemaFor infers the output schema of T, a struct type; the answer's
// content_type is T's name.
func SchemaFor[T any]() (*OutputSchema, error) {
	schema, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	name := reflect.TypeFor[T]().Name()
	if name == "" {
		name = "output"
	}
	return JSONSchema(name, raw)
}

// JSONSchema takes an output schema written as JSON Schema.
func JSONSchema(name string, schema json.RawMessage) (*OutputSchema, error) {
	var parsed jsonschema.Schema
	if err := json.Unmarshal(schema, &parsed); err != nil {
		return nil, fmt.Errorf("output schema %s: %w", name, err)
	}
	if parsed.Type != "object" {
		return nil, fmt.Errorf("output schema %s: the answer must be an object (type: object), not %q", name, parsed.Type)
	}
	resolved, err := parsed.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("output schema %s: %w", name, err)
	}
	if name == "" {
		name = "output"
	}
	return &OutputSchema{Name: name, Schema: schema, resolved: resolved, strict: strictCompatible(&parsed)}, nil
}

// strictCompatible reports whether every object in s is closed
// (additionalProperties: false) and requires all of its properties.
func strictCompatible(s *jsonschema.Schema) bool {
	if s == nil {
		return true
	}
	if s.Type == "object" || len(s.Properties) > 0 {
		if s.AdditionalProperties == nil || s.AdditionalProperties.Not == nil || len(s.Required) != len(s.Properties) {
			return false
		}
		for _, prop := range s.Properties {
			if !strictCompatible(prop) {
				return false
			}
		}
	}
	if s.Items != nil && !strictCompatible(s.Items) {
		return false
	}
	return true
}

// parse decodes and validates a structured answer.
func (s *OutputSchema) parse(content string) (map[string]any, error) {
	var answer map[string]any
	if err := json.Unmarshal([]byte(extractJSON(content)), &answer); err != nil {
		return nil, fmt.Errorf("the answer is not a JSON object matching %s: %w", s.Name, err)
	}
	resolved := s.resolved
	if resolved == nil {
		checked, err := JSONSchema(s.Name, s.Schema)
		if err != nil {
			return nil, err
		}
		resolved = checked.resolved
	}
	if err := resolved.Validate(answer); err != nil {
		return nil, fmt.Errorf("the answer does not match %s: %w", s.Name, err)
	}
	return answer, nil
}

// extractJSON strips a Markdown code fence a model may wrap its JSON in.
func extractJSON(content string) string {
	start, end := -1, -1
	for i := 0; i < len(content); i++ {
		if content[i] == '{' {
			start = i
			break
		}
	}
	for i := len(content) - 1; i >= 0; i-- {
		if content[i] == '}' {
			end = i
			break
		}
	}
	if start < 0 || end < start {
		return content
	}
	return content[start : end+1]
}

// jsonTitle returns a schema's title as a name providers accept (letters,
// digits, _ and -, at most 64), and whether it had one.
func jsonTitle(schema json.RawMessage) (string, bool) {
	var head struct {
		Title string `json:"title"`
	}
	if json.Unmarshal(schema, &head) != nil || head.Title == "" {
		return "", false
	}
	name := []byte(head.Title)
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			name[i] = '_'
		}
	}
	if len(name) > 64 {
		name = name[:64]
	}
	return string(name), true
}
