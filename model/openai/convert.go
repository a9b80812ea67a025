package openai

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// schemaObject turns a JSON Schema into the map the SDK's parameter types
// take. Only the top level is decoded: nested values stay raw JSON so the
// order of properties — which the model follows when it writes an answer —
// is kept. An empty schema is an object without properties.
func schemaObject(schema json.RawMessage) (map[string]any, error) {
	if len(schema) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	object := make(map[string]any, len(top))
	for key, value := range top {
		object[key] = value
	}
	return object, nil
}

// toolSchemas converts each tool's parameters with [schemaObject].
func toolSchemas(tools []model.ToolDefinition) ([]map[string]any, error) {
	schemas := make([]map[string]any, len(tools))
	for i, tool := range tools {
		schema, err := schemaObject(tool.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s parameters: %w", tool.Name, err)
		}
		schemas[i] = schema
	}
	return schemas, nil
}

// schemaName makes a response format's name acceptable to OpenAI, which
// allows only letters, digits, '_' and '-', at most 64 of them.
func schemaName(name string) string {
	cleaned := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
	if cleaned == "" {
		return "response"
	}
	return cleaned[:min(len(cleaned), 64)]
}

// messageText is the text of a message: its string content, or the text
// parts of a list joined by newlines, or any other content as JSON.
func messageText(message *run.Message) string {
	switch content := message.Content.(type) {
	case nil:
		return ""
	case string:
		return content
	case []any:
		var texts []string
		for _, part := range content {
			switch part := part.(type) {
			case string:
				texts = append(texts, part)
			case map[string]any:
				if text, ok := part["text"].(string); ok {
					texts = append(texts, text)
				}
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	encoded, err := json.Marshal(message.Content)
	if err != nil {
		return fmt.Sprint(message.Content)
	}
	return string(encoded)
}

// imageURL is the URL an image is sent as: its own URL, or its content as a
// data URL.
func imageURL(image run.Image) (string, error) {
	if image.URL != "" {
		return image.URL, nil
	}
	if len(image.Content) == 0 {
		return "", errors.New("image has neither a URL nor content (a file path must be read by the caller)")
	}
	mimeType := image.MimeType
	if mimeType == "" && image.Format != "" {
		mimeType = "image/" + strings.TrimPrefix(strings.ToLower(image.Format), ".")
	}
	if mimeType == "" {
		mimeType = http.DetectContentType(image.Content)
	}
	return "data:" + mimeType + ";base64," + base64.StdEncoding.EncodeToString(image.Content), nil
}

// toolArguments normalises a call's arguments: a call without arguments
// gets an empty object, which is what a tool expects.
func toolArguments(arguments string) string {
	if strings.TrimSpace(arguments) == "" {
		return "{}"
	}
	return arguments
}

// newToolCall is a run.ToolCall of a function.
func newToolCall(id, name, arguments string) run.ToolCall {
	return run.ToolCall{
		ID:       id,
		Type:     "function",
		Function: run.ToolCallFunction{Name: name, Arguments: toolArguments(arguments)},
	}
}

// withTotal fills in a missing total token count.
func withTotal(usage run.Metrics) run.Metrics {
	if usage.TotalTokens == 0 {
		usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	}
	return usage
}
