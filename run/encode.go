package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// EncodeEvent is an event as it travels to clients and between replicas:
// compact JSON with null members left out at any depth, as AgentOS streams
// its events. Every event is encoded once, here, when its run's event log
// numbers it; SSE frames, the durable stream and Redis carry these bytes.
func EncodeEvent(e Event) ([]byte, error) {
	data, err := json.Marshal(e)
	if err == nil {
		data, err = dropNulls(data)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", e.EventName(), err)
	}
	return data, nil
}

// dropNulls removes every object member whose value is null, at any depth,
// keeping the order of the rest: AgentOS leaves None values out of the
// events it streams.
func dropNulls(data []byte) ([]byte, error) {
	if !bytes.Contains(data, []byte("null")) {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(data))
	if err := copyValue(dec, &out); err != nil {
		return nil, fmt.Errorf("drop nulls: %w", err)
	}
	return out.Bytes(), nil
}

// copyValue copies the next JSON value from dec to out, without null members.
func copyValue(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	return copyToken(dec, out, tok)
}

func copyToken(dec *json.Decoder, out *bytes.Buffer, tok json.Token) error {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return copyObject(dec, out)
		case '[':
			return copyArray(dec, out)
		}
		return fmt.Errorf("unexpected %q", v)
	case string:
		encoded, _ := json.Marshal(v) // a string always encodes
		out.Write(encoded)
	case json.Number:
		out.WriteString(v.String())
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func copyObject(dec *json.Decoder, out *bytes.Buffer) error {
	out.WriteByte('{')
	first := true
	for dec.More() {
		keyTok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := keyTok.(string)
		if !ok {
			return fmt.Errorf("object key is %T", keyTok)
		}
		valTok, err := dec.Token()
		if err != nil {
			return err
		}
		if valTok == nil {
			continue
		}
		if !first {
			out.WriteByte(',')
		}
		first = false
		encoded, _ := json.Marshal(key) // a string always encodes
		out.Write(encoded)
		out.WriteByte(':')
		if err := copyToken(dec, out, valTok); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF { // the closing brace
		return err
	}
	out.WriteByte('}')
	return nil
}

func copyArray(dec *json.Decoder, out *bytes.Buffer) error {
	out.WriteByte('[')
	first := true
	for dec.More() {
		if !first {
			out.WriteByte(',')
		}
		first = false
		if err := copyValue(dec, out); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF { // the closing bracket
		return err
	}
	out.WriteByte(']')
	return nil
}
