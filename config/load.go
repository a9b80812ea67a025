package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem at one line of a config file. [Load] and [Parse] return
// every problem they find, joined with errors.Join; match one with errors.As.
type Error struct {
	// Source names the file, as given to [Load] or [Parse].
	Source string
	// Line is the 1-based line of the problem; 0 when it concerns the whole
	// file.
	Line int
	// Message says what is wrong and, where it can, how to fix it.
	Message string
}

// Error implements error: "agnogo.yaml:12: unknown key "modle" in agent "coder"".
func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Source + ": " + e.Message
	}
	return e.Source + ":" + strconv.Itoa(e.Line) + ": " + e.Message
}

// maxErrors caps the problems reported for one file: past that, the rest
// are usually consequences of the first ones.
const maxErrors = 10

// Load reads and parses the config file at path; see [Parse].
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(data, path)
}

// Parse reads a config file's YAML. source names the file in error messages.
//
// ${VAR} and ${VAR:-default} in values are replaced from the environment
// first (see the package documentation). The result has every default filled
// in and every reference checked; any problem — an unknown key, a value of
// the wrong type, a duplicate agent id, a model reference that leads nowhere
// — is returned as one or more [*Error] naming the line.
func Parse(data []byte, source string) (*File, error) {
	return parse(data, source, os.Getenv)
}

// parse is [Parse] with the environment as a function, for tests.
func parse(data []byte, source string, getenv func(string) string) (*File, error) {
	if source == "" {
		source = "config"
	}
	d := &decoder{source: source, getenv: getenv}
	masked, values := maskVariables(data)
	d.variables = values

	var doc yaml.Node
	if err := yaml.Unmarshal(masked, &doc); err != nil {
		return nil, d.syntaxError(err)
	}
	file := d.decodeFile(&doc)
	d.resolve(file)
	if len(d.errs) > 0 {
		return nil, d.joined()
	}
	return file, nil
}

// syntaxError turns a YAML syntax error ("yaml: line 3: …") into an [*Error].
func (d *decoder) syntaxError(err error) error {
	message := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(message, "line "); ok {
		if number, tail, ok := strings.Cut(rest, ": "); ok {
			if n, convErr := strconv.Atoi(number); convErr == nil {
				line, message = n, tail
			}
		}
	}
	if slices.Contains(parserProblems, message) {
		// yaml.v3 counts the lines of parser errors (unlike those of
		// scanner errors) from 0: the line of the collection left open.
		line++
	}
	return &Error{Source: d.source, Line: line, Message: "invalid YAML: " + message}
}

// parserProblems are the messages of yaml.v3's parser errors; every other
// syntax error comes from its scanner.
var parserProblems = []string{
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
}

// The expansion syntax: ${NAME}, ${NAME:-default}, and $${ for a literal ${.
var variablePattern = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// placeholderPattern finds the placeholders maskVariables leaves.
var placeholderPattern = regexp.MustCompile(`__agnogo_var_([0-9]+)__`)

// variable is one ${…} of the file.
type variable struct {
	// literal is set for the $${ escape: the text is "${".
	literal    bool
	name       string
	fallback   string
	hasDefault bool
}

// maskVariables replaces each ${…} of data by a placeholder made of letters,
// digits and underscores. YAML then parses the file as written — a ${VAR}
// inside a flow mapping {api_key: ${KEY}} would otherwise end the mapping at
// its braces — and lines keep their numbers. The placeholders are expanded in
// the scalar values afterwards, so a value with a colon, a quote or a newline
// can never change the file's structure.
func maskVariables(data []byte) ([]byte, []variable) {
	var values []variable
	masked := variablePattern.ReplaceAllFunc(data, func(match []byte) []byte {
		v := variable{}
		if bytes.Equal(match, []byte("$${")) {
			v.literal = true
		} else {
			groups := variablePattern.FindSubmatch(match)
			v.name = string(groups[1])
			v.hasDefault = bytes.Contains(match, []byte(":-"))
			v.fallback = string(groups[2])
		}
		values = append(values, v)
		return fmt.Appendf(nil, "__agnogo_var_%d__", len(values)-1)
	})
	return masked, values
}

// expand replaces the placeholders of node's value, and its children's, by
// their values from the environment. A plain (unquoted) scalar whose value
// changed has its type worked out again from the new text, so that
// `retries: ${RETRIES:-2}` is a number.
func (d *decoder) expand(node *yaml.Node) {
	if node == nil {
		return
	}
	for _, child := range node.Content {
		d.expand(child)
	}
	if node.Kind != yaml.ScalarNode {
		return
	}
	if strings.Contains(node.Value, "${") {
		d.errorf(node, "malformed variable in %q: write ${NAME} or ${NAME:-default} (NAME is letters, digits and _), or $${ for a literal ${", node.Value)
		return
	}
	if !strings.Contains(node.Value, "__agnogo_var_") {
		return
	}
	expanded := placeholderPattern.ReplaceAllStringFunc(node.Value, func(match string) string {
		index, err := strconv.Atoi(placeholderPattern.FindStringSubmatch(match)[1])
		if err != nil || index >= len(d.variables) {
			return match
		}
		v := d.variables[index]
		if v.literal {
			return "${"
		}
		value := d.getenv(v.name)
		if value == "" && v.hasDefault {
			return v.fallback
		}
		return value
	})
	if expanded == node.Value {
		return
	}
	node.Value = expanded
	if node.Style == 0 {
		node.Tag = "" // resolved again from the new text by ShortTag
	}
}

// joined returns the problems found, at most maxErrors of them.
func (d *decoder) joined() error {
	errs := slices.Clone(d.errs)
	slices.SortStableFunc(errs, func(a, b error) int {
		return cmp.Compare(lineOf(a), lineOf(b))
	})
	if len(errs) > maxErrors {
		errs = append(errs[:maxErrors:maxErrors], &Error{Source: d.source, Message: fmt.Sprintf("and %d more problems", len(d.errs)-maxErrors)})
	}
	return errors.Join(errs...)
}

// lineOf is the line of an [*Error], 0 for anything else.
func lineOf(err error) int {
	var configErr *Error
	if errors.As(err, &configErr) {
		return configErr.Line
	}
	return 0
}
