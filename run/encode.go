package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
// events it streams. It copies the JSON in one pass over its bytes (strings
// and numbers verbatim, whitespace dropped); data that is not valid JSON is
// an error.
func dropNulls(data []byte) ([]byte, error) {
	if !bytes.Contains(data, []byte("null")) {
		return data, nil
	}
	if !json.Valid(data) {
		return nil, errors.New("drop nulls: invalid JSON")
	}
	c := nullDropper{in: data, out: make([]byte, 0, len(data))}
	c.value()
	return c.out, nil
}

// nullDropper copies valid JSON from in to out without null members.
type nullDropper struct {
	in  []byte
	pos int
	out []byte
}

// space skips whitespace.
func (c *nullDropper) space() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// value copies the value at pos.
func (c *nullDropper) value() {
	c.space()
	switch c.in[c.pos] {
	case '{':
		c.object()
	case '[':
		c.array()
	case '"':
		c.out = append(c.out, c.in[c.pos:c.stringEnd()]...)
		c.pos = c.stringEnd()
	default: // a number, true, false or null: up to the next delimiter
		start := c.pos
		for c.pos < len(c.in) && !bytes.ContainsRune([]byte(",]} \t\n\r"), rune(c.in[c.pos])) {
			c.pos++
		}
		c.out = append(c.out, c.in[start:c.pos]...)
	}
}

// stringEnd is the position just after the string starting at pos.
func (c *nullDropper) stringEnd() int {
	i := c.pos + 1
	for c.in[i] != '"' {
		if c.in[i] == '\\' {
			i++
		}
		i++
	}
	return i + 1
}

// isNull reports whether the value at pos is the literal null.
func (c *nullDropper) isNull() bool {
	return bytes.HasPrefix(c.in[c.pos:], []byte("null"))
}

func (c *nullDropper) object() {
	c.out = append(c.out, '{')
	c.pos++ // {
	first := true
	for {
		c.space()
		if c.in[c.pos] == '}' {
			c.pos++
			c.out = append(c.out, '}')
			return
		}
		if c.in[c.pos] == ',' {
			c.pos++
			c.space()
		}
		keyStart, keyEnd := c.pos, c.stringEnd()
		c.pos = keyEnd
		c.space()
		c.pos++ // :
		c.space()
		if c.isNull() {
			c.pos += len("null")
			continue
		}
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		c.out = append(c.out, c.in[keyStart:keyEnd]...)
		c.out = append(c.out, ':')
		c.value()
	}
}

func (c *nullDropper) array() {
	c.out = append(c.out, '[')
	c.pos++ // [
	first := true
	for {
		c.space()
		switch c.in[c.pos] {
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return
		case ',':
			c.pos++
			continue
		}
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		c.value()
	}
}
