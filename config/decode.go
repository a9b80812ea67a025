package config

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decoder walks the YAML node tree by hand rather than decoding into tagged
// structs: that is what lets every problem name its key, its place in the
// file ("in agent "coder"") and its line, and lets it report all of them at
// once instead of stopping at the first.
type decoder struct {
	source    string
	getenv    func(string) string
	variables []variable
	errs      []error
}

// errorf records a problem at node's line.
func (d *decoder) errorf(node *yaml.Node, format string, args ...any) {
	line := 0
	if node != nil {
		line = node.Line
	}
	d.errorAt(line, format, args...)
}

// errorAt records a problem at a line.
func (d *decoder) errorAt(line int, format string, args ...any) {
	d.errs = append(d.errs, &Error{Source: d.source, Line: line, Message: fmt.Sprintf(format, args...)})
}

// field is one key: value pair of a mapping.
type field struct {
	key   *yaml.Node
	value *yaml.Node
}

// name is the key's text.
func (f field) name() string { return f.key.Value }

// deref follows an alias to the node it names.
func deref(node *yaml.Node) *yaml.Node {
	for node != nil && node.Kind == yaml.AliasNode {
		node = node.Alias
	}
	return node
}

// isNull reports an absent value: `key:` or `key: null`.
func isNull(node *yaml.Node) bool {
	node = deref(node)
	return node == nil || (node.Kind == yaml.ScalarNode && node.ShortTag() == "!!null")
}

// kindName names what a node holds, for "want X, got Y" messages.
func kindName(node *yaml.Node) string {
	node = deref(node)
	switch {
	case node == nil:
		return "nothing"
	case node.Kind == yaml.MappingNode:
		return "a mapping"
	case node.Kind == yaml.SequenceNode:
		return "a list"
	case node.ShortTag() == "!!null":
		return "null"
	}
	return strconv.Quote(node.Value)
}

// where places a key of what ("in agent "coder""); what is "" for the
// top level of the file.
func where(what string) string {
	if what == "" {
		return "at top level"
	}
	return "in " + what
}

// decodeList reads a top-level list of entries (agents, teams,
// workflows) with decode: key names the list, needs says what an empty
// entry lacks.
func decodeList[T any](d *decoder, node *yaml.Node, key, needs string, decode func(*yaml.Node, int) T) []T {
	node = deref(node)
	if isNull(node) {
		return nil
	}
	if node.Kind != yaml.SequenceNode {
		d.errorf(node, "%s: want a list of %s (each starting with - id: …), got %s", key, key, kindName(node))
		return nil
	}
	entries := make([]T, 0, len(node.Content))
	for i, item := range node.Content {
		if isNull(item) {
			d.errorf(item, "%s[%d] is empty; %s", key, i, needs)
			continue
		}
		entries = append(entries, decode(item, i))
	}
	return entries
}

// entryID reads the id of a list entry (an agent, a team, a workflow)
// before its other keys, so that every other problem can name it: it
// returns the id and the entry's name in messages — `kind "id"`, or what
// (e.g. `teams[0]`) when it has none, which is reported.
func (d *decoder) entryID(node *yaml.Node, fields []field, what, kind string) (id, named string) {
	named = what
	hasID := false
	for _, f := range fields {
		if f.name() != "id" {
			continue
		}
		hasID = true
		if id = d.str(f.value, label("id", what)); id != "" {
			named = fmt.Sprintf("%s %q", kind, id)
		}
	}
	if id == "" && deref(node).Kind == yaml.MappingNode {
		if hasID {
			d.errorf(node, "%s has an empty id; give it a unique name", named)
		} else {
			d.errorf(node, "%s has no id; add id: followed by a unique name", named)
		}
	}
	return id, named
}

// fields returns a mapping's pairs in order, with `<<: *anchor` merges
// applied (keys written in the mapping win), and reports duplicate keys. A
// null value is an empty mapping; anything else but a mapping is reported.
// what names the mapping in messages (e.g. `queue`, `agent "coder"`).
func (d *decoder) fields(node *yaml.Node, what string) []field {
	node = deref(node)
	if isNull(node) {
		return nil
	}
	if node.Kind != yaml.MappingNode {
		d.errorf(node, "%s: want a mapping of keys, got %s", cmp.Or(what, "the file"), kindName(node))
		return nil
	}
	var own, merged []field
	seen := map[string]int{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, value := node.Content[i], node.Content[i+1]
		if key.Kind == yaml.ScalarNode && key.ShortTag() == "!!merge" {
			merged = append(merged, d.mergeFields(value, what)...)
			continue
		}
		if key.Kind != yaml.ScalarNode {
			d.errorf(key, "a key %s must be a plain word, got %s", where(what), kindName(key))
			continue
		}
		if first, dup := seen[key.Value]; dup {
			d.errorf(key, "duplicate key %q %s (first at line %d)", key.Value, where(what), first)
			continue
		}
		seen[key.Value] = key.Line
		own = append(own, field{key: key, value: value})
	}
	for _, f := range merged {
		if _, overridden := seen[f.name()]; !overridden {
			seen[f.name()] = f.key.Line
			own = append(own, f)
		}
	}
	return own
}

// mergeFields returns the pairs a `<<:` value brings: one mapping or a list
// of them, earlier ones winning.
func (d *decoder) mergeFields(value *yaml.Node, what string) []field {
	value = deref(value)
	if value.Kind == yaml.SequenceNode {
		var all []field
		seen := map[string]bool{}
		for _, item := range value.Content {
			for _, f := range d.fields(item, what) {
				if !seen[f.name()] {
					seen[f.name()] = true
					all = append(all, f)
				}
			}
		}
		return all
	}
	return d.fields(value, what)
}

// unknownKey reports a key that has no meaning where it is, suggesting the
// nearest known key when one is close.
func (d *decoder) unknownKey(f field, what string, known []string) {
	hint := ""
	if near := nearest(f.name(), known); near != "" {
		hint = fmt.Sprintf("; did you mean %q?", near)
	} else if len(known) > 0 {
		hint = "; known keys: " + strings.Join(known, ", ")
	}
	d.errorf(f.key, "unknown key %q %s%s", f.name(), where(what), hint)
}

// scalar returns the node as a scalar, reporting anything else.
func (d *decoder) scalar(node *yaml.Node, what, want string) (*yaml.Node, bool) {
	node = deref(node)
	if node == nil || node.Kind != yaml.ScalarNode {
		d.errorf(node, "%s: want %s, got %s", what, want, kindName(node))
		return nil, false
	}
	return node, true
}

// str reads a string. Any scalar is taken as written (`name: 2026` is the
// string "2026"); null is "".
func (d *decoder) str(node *yaml.Node, what string) string {
	if isNull(node) {
		return ""
	}
	node, ok := d.scalar(node, what, "a string")
	if !ok {
		return ""
	}
	return node.Value
}

// boolean reads true or false.
func (d *decoder) boolean(node *yaml.Node, what string) bool {
	node, ok := d.scalar(node, what, "true or false")
	if !ok {
		return false
	}
	var value bool
	if node.ShortTag() != "!!bool" || node.Decode(&value) != nil {
		d.errorf(node, "%s: want true or false, got %s", what, kindName(node))
	}
	return value
}

// integer reads a whole number of at least minimum.
func (d *decoder) integer(node *yaml.Node, what string, minimum int) int {
	node, ok := d.scalar(node, what, "a whole number")
	if !ok {
		return 0
	}
	var value int
	if node.ShortTag() != "!!int" || node.Decode(&value) != nil {
		d.errorf(node, "%s: want a whole number, got %s", what, kindName(node))
		return 0
	}
	if value < minimum {
		d.errorf(node, "%s: want a number of at least %d, got %d", what, minimum, value)
		return 0
	}
	return value
}

// number reads a number (whole or not) between minimum and maximum.
func (d *decoder) number(node *yaml.Node, what string, minimum, maximum float64) float64 {
	node, ok := d.scalar(node, what, "a number")
	if !ok {
		return 0
	}
	var value float64
	tag := node.ShortTag()
	if (tag != "!!int" && tag != "!!float") || node.Decode(&value) != nil || math.IsNaN(value) || math.IsInf(value, 0) {
		d.errorf(node, "%s: want a number, got %s", what, kindName(node))
		return 0
	}
	if value < minimum || value > maximum {
		d.errorf(node, "%s: want a number from %g to %g, got %g", what, minimum, maximum, value)
		return 0
	}
	return value
}

// strings reads a list of strings; null is an empty list.
func (d *decoder) strings(node *yaml.Node, what string) []string {
	node = deref(node)
	if isNull(node) {
		return nil
	}
	if node.Kind != yaml.SequenceNode {
		d.errorf(node, "%s: want a list such as [a, b], got %s", what, kindName(node))
		return nil
	}
	values := make([]string, 0, len(node.Content))
	for _, item := range node.Content {
		values = append(values, d.str(item, what))
	}
	return values
}

// oneOf reads a string that must be one of choices ("" is allowed when
// optional).
func (d *decoder) oneOf(node *yaml.Node, what string, optional bool, choices ...string) string {
	value := d.str(node, what)
	if (value == "" && optional) || slices.Contains(choices, value) {
		return value
	}
	d.errorf(node, "%s: %s is not one of %s", what, kindName(node), strings.Join(choices, ", "))
	return ""
}

// jsonValue converts a YAML value to the value encoding/json would decode
// from the same document: mappings to map[string]any, lists to []any,
// numbers to int64 or float64.
func (d *decoder) jsonValue(node *yaml.Node, what string) any {
	node = deref(node)
	switch node.Kind {
	case yaml.MappingNode:
		object := map[string]any{}
		for _, f := range d.fields(node, what) {
			object[f.name()] = d.jsonValue(f.value, what+"."+f.name())
		}
		return object
	case yaml.SequenceNode:
		list := make([]any, 0, len(node.Content))
		for _, item := range node.Content {
			list = append(list, d.jsonValue(item, what))
		}
		return list
	}
	switch node.ShortTag() {
	case "!!null":
		return nil
	case "!!bool", "!!int", "!!float":
		var value any
		if err := node.Decode(&value); err != nil {
			d.errorf(node, "%s: %v", what, err)
		}
		if f, ok := value.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			d.errorf(node, "%s: %s is not a JSON number", what, node.Value)
			return nil
		}
		return value
	}
	return node.Value
}

// nearest returns the known word within two edits of word, if any.
func nearest(word string, known []string) string {
	best, bestDistance := "", 3
	for _, candidate := range known {
		if distance := editDistance(word, candidate); distance < bestDistance {
			best, bestDistance = candidate, distance
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	previous := make([]int, len(b)+1)
	current := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			current[j] = min(previous[j]+1, current[j-1]+1, previous[j-1]+cost)
		}
		previous, current = current, previous
	}
	return previous[len(b)]
}
