package calculator_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/tools/calculator"
)

func call(t *testing.T, name, args string) (map[string]any, error) {
	t.Helper()
	for _, tl := range calculator.Tools() {
		if tl.Spec().Name != name {
			continue
		}
		out, err := tl.Call(t.Context(), json.RawMessage(args))
		if err != nil {
			return nil, err
		}
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &v), out)
		return v, nil
	}
	t.Fatalf("no tool %s", name)
	return nil, nil
}

func TestCalculator(t *testing.T) {
	var names []string
	for _, tl := range calculator.Tools() {
		names = append(names, tl.Spec().Name)
		require.NotEmpty(t, tl.Spec().Description)
	}
	require.Equal(t, calculator.Names(), names)
	for _, tc := range []struct {
		name, args string
		want       any
	}{
		{"add", `{"a":2,"b":3.5}`, 5.5},
		{"subtract", `{"a":2,"b":3}`, -1.0},
		{"multiply", `{"a":6,"b":7}`, 42.0},
		{"divide", `{"a":1,"b":4}`, 0.25},
		{"exponentiate", `{"a":2,"b":10}`, 1024.0},
		{"factorial", `{"n":5}`, 120.0},
		{"factorial", `{"n":0}`, 1.0},
		{"factorial", `{"n":25}`, "15511210043330985984000000"},
		{"is_prime", `{"n":97}`, true},
		{"is_prime", `{"n":1}`, false},
		{"square_root", `{"n":2.25}`, 1.5},
	} {
		got, err := call(t, tc.name, tc.args)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got["result"], "%s %s", tc.name, tc.args)
	}
	for _, tc := range []struct{ name, args, want string }{
		{"divide", `{"a":1,"b":0}`, "division by zero"},
		{"square_root", `{"n":-4}`, "negative"},
		{"factorial", `{"n":171}`, "from 0 to 170"},
		{"exponentiate", `{"a":10,"b":400}`, "not a finite number"},
	} {
		_, err := call(t, tc.name, tc.args)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	_, err := call(t, "add", `{"a":"two","b":3}`)
	var argErr *tool.ArgumentError
	require.ErrorAs(t, err, &argErr, "arguments of the wrong type are the model's to fix")
}
