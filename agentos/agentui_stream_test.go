package agentos_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// How the agent-ui tests (agentui_test.go) read a run stream: a port of the
// UI's stream reader.

// readRunStream reads a run's response body the way streamResponse in
// src/hooks/useAIResponseStream.ts does: it never looks at SSE `event:` or
// `data:` lines, it decodes each chunk as it arrives and pulls complete,
// brace-balanced JSON objects out of the accumulated text (see
// takeJSONObjects), until the server closes the body. Reads are kept small
// so objects and UTF-8 characters span several of them.
func readRunStream(body io.Reader, onChunk func(map[string]any)) error {
	var buffer string
	read := make([]byte, 61)
	for {
		n, err := body.Read(read)
		buffer += string(read[:n])
		buffer = takeJSONObjects(buffer, onChunk)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the run stream: %w", err)
		}
	}
}

// takeJSONObjects follows parseBuffer in src/hooks/useAIResponseStream.ts.
// From the first '{' it counts braces outside JSON strings (minding
// backslash escapes) to find where the object ends; a complete object is
// parsed and handed on — as is when it has a string "event" and no "data"
// key, else flattened from {event, data} with data possibly JSON text — and
// the rest of the buffer, trimmed, is scanned again. Text that does not
// parse is skipped one brace at a time; an unfinished object is returned to
// wait for more bytes. Scanning bytes finds the same braces and quotes as
// scanning UTF-16 units: in UTF-8 no ASCII byte occurs inside a multi-byte
// character.
func takeJSONObjects(buffer string, onChunk func(map[string]any)) string {
	start := strings.IndexByte(buffer, '{')
	for start != -1 {
		depth, inString, escaped, end := 0, false, false, -1
		for i := start; i < len(buffer) && end < 0; i++ {
			c := buffer[i]
			switch {
			case inString && escaped:
				escaped = false
			case inString && c == '\\':
				escaped = true
			case inString && c == '"':
				inString = false
			case inString:
			case c == '"':
				inString = true
			case c == '{':
				depth++
			case c == '}':
				depth--
				if depth == 0 {
					end = i
				}
			}
		}
		if end < 0 {
			break // wait for the rest of the object
		}
		var parsed map[string]any
		if err := json.Unmarshal([]byte(buffer[start:end+1]), &parsed); err != nil || parsed == nil {
			next := strings.IndexByte(buffer[start+1:], '{')
			if next < 0 {
				break
			}
			start += 1 + next
			continue
		}
		onChunk(flattenEventData(parsed))
		buffer = strings.TrimSpace(buffer[end+1:])
		start = strings.IndexByte(buffer, '{')
	}
	return buffer
}

// flattenEventData follows isLegacyFormat and convertNewFormatToLegacy in
// src/hooks/useAIResponseStream.ts.
func flattenEventData(parsed map[string]any) map[string]any {
	_, hasData := parsed["data"]
	if _, named := parsed["event"].(string); named && !hasData {
		return parsed
	}
	fields := map[string]any{}
	switch data := parsed["data"].(type) {
	case string:
		_ = json.Unmarshal([]byte(data), &fields) // text that is not JSON gives no fields
	case map[string]any:
		fields = data
	}
	flat := map[string]any{"event": parsed["event"]}
	for k, v := range fields {
		flat[k] = v
	}
	return flat
}
