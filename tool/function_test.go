package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

type searchArgs struct {
	Query string   `json:"query" jsonschema:"what to look for"`
	Limit int      `json:"limit,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Exact *bool    `json:"exact,omitempty"`
}

type nestedArgs struct {
	Filter struct {
		Min int `json:"min"`
	} `json:"filter"`
}

func echo[Args any](ctx context.Context, args Args) (Args, error) { return args, nil }

func TestNewInfersSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool func() (tool.Tool, error)
		want string
	}{
		{
			name: "struct",
			tool: func() (tool.Tool, error) { return tool.New(tool.Config{Name: "search"}, echo[searchArgs]) },
			want: `{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},` +
				`"limit":{"type":"integer"},"tags":{"type":["null","array"],"items":{"type":"string"}},` +
				`"exact":{"type":["null","boolean"]}},"required":["query"],"additionalProperties":false}`,
		},
		{
			name: "pointer to struct",
			tool: func() (tool.Tool, error) { return tool.New(tool.Config{Name: "search"}, echo[*searchArgs]) },
			want: `{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},` +
				`"limit":{"type":"integer"},"tags":{"type":["null","array"],"items":{"type":"string"}},` +
				`"exact":{"type":["null","boolean"]}},"required":["query"],"additionalProperties":false}`,
		},
		{
			name: "empty struct lists no properties",
			tool: func() (tool.Tool, error) { return tool.New(tool.Config{Name: "noop"}, echo[struct{}]) },
			want: `{"type":"object","properties":{},"additionalProperties":false}`,
		},
		{
			name: "map",
			tool: func() (tool.Tool, error) { return tool.New(tool.Config{Name: "free"}, echo[map[string]int]) },
			want: `{"type":"object","additionalProperties":{"type":"integer"}}`,
		},
		{
			name: "hand-written schema keeps its text",
			tool: func() (tool.Tool, error) {
				return tool.Func(tool.Config{Name: "raw"}, json.RawMessage(`{
					"type": "object",
					"properties": {"z": {"type": "string"}, "a": {"type": "number"}}
				}`), rawEcho)
			},
			want: `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"number"}}}`,
		},
		{
			name: "hand-written nil schema",
			tool: func() (tool.Tool, error) { return tool.Func(tool.Config{Name: "raw"}, nil, rawEcho) },
			want: `{"type":"object","properties":{}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.tool()
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got.Spec().Parameters))
			require.Equal(t, tt.want, string(got.Spec().Parameters), "property order follows the fields")
		})
	}
}

func rawEcho(ctx context.Context, args json.RawMessage) (string, error) { return string(args), nil }

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tool    func() (tool.Tool, error)
		wantErr string
	}{
		{"empty name", func() (tool.Tool, error) { return tool.New(tool.Config{}, echo[searchArgs]) }, "invalid tool name"},
		{"name with space", func() (tool.Tool, error) { return tool.New(tool.Config{Name: "get weather"}, echo[searchArgs]) }, "invalid tool name"},
		{"name too long", func() (tool.Tool, error) {
			return tool.New(tool.Config{Name: string(make([]byte, 65))}, echo[searchArgs])
		}, "invalid tool name"},
		{"string args", func() (tool.Tool, error) { return tool.New(tool.Config{Name: "s"}, echo[string]) }, "not a struct or a map"},
		{"slice args", func() (tool.Tool, error) { return tool.New(tool.Config{Name: "s"}, echo[[]int]) }, "not a struct or a map"},
		{"unsupported field", func() (tool.Tool, error) {
			return tool.New(tool.Config{Name: "s"}, echo[struct {
				C chan int `json:"c"`
			}])
		}, "infer parameters schema"},
		{"nil function", func() (tool.Tool, error) {
			return tool.New[searchArgs, string](tool.Config{Name: "s"}, nil)
		}, "nil function"},
		{"raw schema not an object", func() (tool.Tool, error) {
			return tool.Func(tool.Config{Name: "s"}, json.RawMessage(`{"type":"string"}`), rawEcho)
		}, `must have type "object"`},
		{"raw schema not JSON", func() (tool.Tool, error) {
			return tool.Func(tool.Config{Name: "s"}, json.RawMessage(`{"type":`), rawEcho)
		}, "parse parameters schema"},
		{"raw schema with a remote ref", func() (tool.Tool, error) {
			return tool.Func(tool.Config{Name: "s"}, json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`), rawEcho)
		}, "resolve parameters schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.tool()
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestMustNewPanicsOnProgrammerError(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { tool.MustNew(tool.Config{Name: "bad name"}, echo[searchArgs]) })
	require.NotPanics(t, func() { tool.MustNew(tool.Config{Name: "good"}, echo[searchArgs]) })
}

func TestCallValidatesArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       string
		wantReason string
	}{
		{"invalid JSON", `{"query":`, "arguments are not valid JSON"},
		{"not an object", `["a"]`, "arguments must be a JSON object, got an array"},
		{"a string", `"a"`, "arguments must be a JSON object, got a string"},
		{"wrong type", `{"query":42}`, `property "query": type: 42 has type "integer", want "string"`},
		{"fraction for an integer", `{"query":"a","limit":1.5}`, `property "limit": type: 1.5 has type "number", want "integer"`},
		{"wrong item type", `{"query":"a","tags":[1]}`, `property "tags[]": type: 1 has type "integer", want "string"`},
		{"missing required", `{}`, `required: missing properties: ["query"]`},
		{"empty arguments", ``, `required: missing properties: ["query"]`},
		{"unknown property", `{"query":"a","colour":"red"}`, `unexpected additional properties ["colour"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			called := false
			search, err := tool.New(tool.Config{Name: "search"}, func(ctx context.Context, args searchArgs) (string, error) {
				called = true
				return "ok", nil
			})
			require.NoError(t, err)
			_, err = search.Call(context.Background(), json.RawMessage(tt.args))
			var argErr *tool.ArgumentError
			require.ErrorAs(t, err, &argErr)
			require.Equal(t, "search", argErr.Tool)
			require.Contains(t, argErr.Reason, tt.wantReason)
			require.Equal(t, "invalid arguments for tool search: "+argErr.Reason, err.Error())
			require.False(t, called, "the function must not run with bad arguments")
		})
	}
}

func TestCallValidatesNestedArguments(t *testing.T) {
	t.Parallel()
	nested, err := tool.New(tool.Config{Name: "nested"}, echo[nestedArgs])
	require.NoError(t, err)
	_, err = nested.Call(context.Background(), json.RawMessage(`{"filter":{"min":"x"}}`))
	require.ErrorContains(t, err, `property "filter.min": type: x has type "string", want "integer"`)
}

func TestCallDecodesArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want string
	}{
		{"required only", `{"query":"go"}`, `{"query":"go"}`},
		{"all fields", `{"query":"go","limit":3,"tags":["a"],"exact":true}`, `{"query":"go","limit":3,"tags":["a"],"exact":true}`},
		{"null optional", `{"query":"go","tags":null}`, `{"query":"go"}`},
		{"integral float", `{"query":"go","limit":2.0}`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			search, err := tool.New(tool.Config{Name: "search"}, echo[searchArgs])
			require.NoError(t, err)
			got, err := search.Call(context.Background(), json.RawMessage(tt.args))
			if tt.want == "" {
				// The schema accepts 2.0 as an integer, Go's decoder does not:
				// still an argument error, never a crash.
				var argErr *tool.ArgumentError
				require.ErrorAs(t, err, &argErr)
				return
			}
			require.NoError(t, err)
			require.JSONEq(t, tt.want, got)
		})
	}
}

func TestNoArgumentToolAcceptsEmptyArguments(t *testing.T) {
	t.Parallel()
	noop, err := tool.New(tool.Config{Name: "noop"}, func(ctx context.Context, args struct{}) (string, error) { return "done", nil })
	require.NoError(t, err)
	for _, args := range []string{``, `null`, ` `, `{}`} {
		got, err := noop.Call(context.Background(), json.RawMessage(args))
		require.NoError(t, err, "args %q", args)
		require.Equal(t, "done", got)
	}
}

func TestResultEncoding(t *testing.T) {
	t.Parallel()
	type point struct {
		X int `json:"x"`
		Y int `json:"y"`
	}
	type label string
	tests := []struct {
		name   string
		result func() (tool.Tool, error)
		want   string
	}{
		{"string as is", func() (tool.Tool, error) { return constant[string]("plain \"text\"") }, `plain "text"`},
		{"empty string", func() (tool.Tool, error) { return constant[string]("") }, ``},
		{"struct as JSON", func() (tool.Tool, error) { return constant[point](point{1, 2}) }, `{"x":1,"y":2}`},
		{"number as JSON", func() (tool.Tool, error) { return constant[int](42) }, `42`},
		{"nil pointer as null", func() (tool.Tool, error) { return constant[*point](nil) }, `null`},
		{"map as JSON", func() (tool.Tool, error) { return constant[map[string]bool](map[string]bool{"ok": true}) }, `{"ok":true}`},
		{"named string type as JSON", func() (tool.Tool, error) { return constant[label]("x") }, `"x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl, err := tt.result()
			require.NoError(t, err)
			got, err := tl.Call(context.Background(), nil)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func constant[Result any](value Result) (tool.Tool, error) {
	return tool.New(tool.Config{Name: "constant"}, func(ctx context.Context, args struct{}) (Result, error) { return value, nil })
}

func TestResultThatCannotBeEncoded(t *testing.T) {
	t.Parallel()
	tl, err := constant[chan int](make(chan int))
	require.NoError(t, err)
	_, err = tl.Call(context.Background(), nil)
	require.ErrorContains(t, err, "tool constant: encode result")
}

func TestFunctionErrorIsReturned(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tl, err := tool.New(tool.Config{Name: "fails"}, func(ctx context.Context, args struct{}) (string, error) { return "ignored", boom })
	require.NoError(t, err)
	got, err := tl.Call(context.Background(), nil)
	require.ErrorIs(t, err, boom)
	require.Empty(t, got)
}

func TestPanicIsRecovered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool func() (tool.Tool, error)
	}{
		{"typed", func() (tool.Tool, error) {
			return tool.New(tool.Config{Name: "explode"}, func(ctx context.Context, args struct{}) (string, error) {
				var m map[string]int
				m["x"] = 1 // nil map write
				return "", nil
			})
		}},
		{"raw", func() (tool.Tool, error) {
			return tool.Func(tool.Config{Name: "explode"}, nil, func(ctx context.Context, args json.RawMessage) (string, error) {
				panic("kaboom")
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl, err := tt.tool()
			require.NoError(t, err)
			_, err = tl.Call(context.Background(), nil)
			var panicErr *tool.PanicError
			require.ErrorAs(t, err, &panicErr)
			require.Equal(t, "explode", panicErr.Tool)
			require.NotEmpty(t, panicErr.Stack)
			require.Contains(t, err.Error(), "tool explode panicked: ")
		})
	}
}

func TestFuncValidatesArguments(t *testing.T) {
	t.Parallel()
	called := 0
	tl, err := tool.Func(tool.Config{Name: "raw"},
		json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			called++
			return string(args), nil
		})
	require.NoError(t, err)

	got, err := tl.Call(context.Background(), json.RawMessage(`{"n":2}`))
	require.NoError(t, err)
	require.Equal(t, `{"n":2}`, got)

	_, err = tl.Call(context.Background(), json.RawMessage(`{"n":0}`))
	var argErr *tool.ArgumentError
	require.ErrorAs(t, err, &argErr)
	require.Contains(t, argErr.Reason, `property "n": minimum:`)
	require.Equal(t, 1, called)
}

func TestSpecCarriesFlagsAndIsACopy(t *testing.T) {
	t.Parallel()
	fields := []run.UserInputField{{Name: "to", FieldType: "str", Description: "recipient"}}
	tl, err := tool.New(tool.Config{
		Name:                 "send_email",
		Description:          "Send an email.",
		RequiresConfirmation: true,
		RequiresUserInput:    true,
		UserInputSchema:      fields,
		ExternalExecution:    true,
		StopAfterToolCall:    true,
	}, echo[searchArgs])
	require.NoError(t, err)
	fields[0].Name = "changed by the caller"

	spec := tl.Spec()
	require.Equal(t, "send_email", spec.Name)
	require.Equal(t, "Send an email.", spec.Description)
	require.True(t, spec.RequiresConfirmation)
	require.True(t, spec.RequiresUserInput)
	require.True(t, spec.ExternalExecution)
	require.True(t, spec.StopAfterToolCall)
	require.Equal(t, []run.UserInputField{{Name: "to", FieldType: "str", Description: "recipient"}}, spec.UserInputSchema)

	spec.Parameters[0] = 'X'
	spec.UserInputSchema[0].Name = "mutated"
	again := tl.Spec()
	require.Equal(t, byte('{'), again.Parameters[0])
	require.Equal(t, "to", again.UserInputSchema[0].Name)
}

func TestUserInputSchemaDefaultsToParameters(t *testing.T) {
	t.Parallel()
	type bookingArgs struct {
		Name   string         `json:"name" jsonschema:"guest name"`
		Nights int            `json:"nights"`
		Price  float64        `json:"price"`
		Pets   bool           `json:"pets"`
		Dates  []string       `json:"dates"`
		Extras map[string]any `json:"extras"`
	}
	tl, err := tool.New(tool.Config{Name: "book", RequiresUserInput: true}, echo[bookingArgs])
	require.NoError(t, err)
	require.Equal(t, []run.UserInputField{
		{Name: "name", FieldType: "str", Description: "guest name"},
		{Name: "nights", FieldType: "int"},
		{Name: "price", FieldType: "float"},
		{Name: "pets", FieldType: "bool"},
		{Name: "dates", FieldType: "list"},
		{Name: "extras", FieldType: "dict"},
	}, tl.Spec().UserInputSchema)

	plain, err := tool.New(tool.Config{Name: "book"}, echo[bookingArgs])
	require.NoError(t, err)
	require.Nil(t, plain.Spec().UserInputSchema, "no user input, no schema")
}

func TestValidatorMatchesCall(t *testing.T) {
	t.Parallel()
	tl, err := tool.New(tool.Config{Name: "search"}, echo[searchArgs])
	require.NoError(t, err)
	validator, ok := tl.(tool.Validator)
	require.True(t, ok)
	require.NoError(t, validator.ValidateArgs(json.RawMessage(`{"query":"x"}`)))
	var argErr *tool.ArgumentError
	require.ErrorAs(t, validator.ValidateArgs(json.RawMessage(`{}`)), &argErr)
}
