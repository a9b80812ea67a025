package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// marshalJSON encodes v without escaping <, > and &. AgentOS writes frames with
// ensure_ascii=False and no HTML escaping; a caller that wants escaping still gets
// it, because json.Marshal re-escapes whatever a MarshalJSON method returns.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonObject is a JSON object read with its keys in document order, so a value
// passed through unchanged keeps the shape its producer gave it.
type jsonObject struct {
	keys   []string
	fields map[string]json.RawMessage
}

// decodeObject reads data as one JSON object. Duplicate keys keep their first
// position and their last value, as encoding/json would.
func decodeObject(data []byte) (jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	start, err := dec.Token()
	if err != nil {
		return jsonObject{}, err
	}
	if delim, ok := start.(json.Delim); !ok || delim != '{' {
		return jsonObject{}, errors.New("want a JSON object")
	}
	obj := jsonObject{fields: map[string]json.RawMessage{}}
	for dec.More() {
		token, err := dec.Token()
		if err != nil {
			return jsonObject{}, err
		}
		key, ok := token.(string)
		if !ok {
			return jsonObject{}, fmt.Errorf("want an object key, got %v", token)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return jsonObject{}, err
		}
		if _, seen := obj.fields[key]; !seen {
			obj.keys = append(obj.keys, key)
		}
		obj.fields[key] = value
	}
	if _, err := dec.Token(); err != nil {
		return jsonObject{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jsonObject{}, errors.New("trailing data after JSON object")
	}
	return obj, nil
}

// objectWriter builds a JSON object key by key.
type objectWriter struct {
	buf   bytes.Buffer
	count int
}

func (w *objectWriter) add(key string, value json.RawMessage) error {
	if w.count == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	w.count++
	name, err := marshalJSON(key)
	if err != nil {
		return err
	}
	w.buf.Write(name)
	w.buf.WriteByte(':')
	w.buf.Write(value)
	return nil
}

func (w *objectWriter) bytes() []byte {
	if w.count == 0 {
		return []byte("{}")
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes()
}

// isEmptyJSON reports whether raw is a value Agno treats as "nothing there":
// null, false, 0, "", [] or {}.
func isEmptyJSON(raw json.RawMessage) bool {
	switch strings.TrimSpace(string(raw)) {
	case "null", "false", "0", `""`, "[]", "{}":
		return true
	}
	return false
}

// jsonKeys lists the JSON object keys a struct type encodes, following embedded
// structs, in declaration order.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for field := range t.Fields() {
		tag := field.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if field.Anonymous && name == "" && field.Type.Kind() == reflect.Struct {
			keys = append(keys, jsonKeys(field.Type)...)
			continue
		}
		if !field.IsExported() {
			continue
		}
		keys = append(keys, name)
	}
	return keys
}

// pythonISOLayouts are the forms Python's datetime.isoformat produces for an
// aware UTC time, with and without microseconds.
const (
	pythonISOMicros  = "2006-01-02T15:04:05.000000-07:00"
	pythonISOSeconds = "2006-01-02T15:04:05-07:00"
)

// formatPythonISO renders t the way Python's datetime.isoformat does: six
// fractional digits only when there are microseconds, and "+00:00" for UTC.
func formatPythonISO(t time.Time) string {
	t = t.Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format(pythonISOSeconds)
	}
	return t.Format(pythonISOMicros)
}

// parsePythonISO reads a timestamp written by Python's isoformat or by Go's
// RFC 3339, returned in UTC; a naive timestamp (no offset) is taken as UTC.
func parsePythonISO(text string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999"} {
		if parsed, err := time.Parse(layout, text); err == nil {
			return parsed.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("parse timestamp %q: not ISO 8601", text)
}
