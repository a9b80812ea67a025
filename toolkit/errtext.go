package toolkit

import "encoding/json"

// errorText is the error message in an API's error body: the string under
// "error" (or "error"."message"), "message", "detail" or "errors"[0], else
// the body itself.
func errorText(body []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return string(body)
	}
	for _, key := range []string{"error", "message", "detail", "errors"} {
		raw, ok := fields[key]
		if !ok {
			continue
		}
		if text := textOf(raw); text != "" {
			return text
		}
	}
	return string(body)
}

// textOf is a JSON value's message: a string, an object's "message", or
// the first element's.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var object struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &object) == nil && object.Message != "" {
		return object.Message
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
		return textOf(list[0])
	}
	return ""
}
