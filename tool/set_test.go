package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/tool"
)

func named(name string) tool.Tool {
	return tool.MustNew(tool.Config{Name: name}, func(ctx context.Context, args struct{}) (string, error) { return name, nil })
}

// fixedSpec is a hand-rolled Tool, as third-party code may write one.
type fixedSpec struct{ spec tool.Spec }

func (f fixedSpec) Spec() tool.Spec { return f.spec }
func (f fixedSpec) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return f.spec.Name, nil
}

func TestNewSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tools   []tool.Tool
		wantErr string
	}{
		{"empty", nil, ""},
		{"unique", []tool.Tool{named("a"), named("b")}, ""},
		{"duplicate", []tool.Tool{named("a"), named("b"), named("a")}, `duplicate tool name "a"`},
		{"nil tool", []tool.Tool{named("a"), nil}, "tool 1 is nil"},
		{"invalid name", []tool.Tool{fixedSpec{tool.Spec{Name: "no spaces allowed"}}}, "invalid tool name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set, err := tool.NewSet(tt.tools...)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Nil(t, set)
				return
			}
			require.NoError(t, err)
			require.Equal(t, len(tt.tools), set.Len())
		})
	}
}

func TestSetLookupAndOrder(t *testing.T) {
	t.Parallel()
	set, err := tool.NewSet(named("zeta"), named("alpha"), named("mid"))
	require.NoError(t, err)

	require.Equal(t, []string{"zeta", "alpha", "mid"}, set.Names())
	specs := set.Specs()
	require.Len(t, specs, 3)
	require.Equal(t, "alpha", specs[1].Name)

	got, ok := set.Lookup("mid")
	require.True(t, ok)
	require.Equal(t, "mid", got.Spec().Name)
	_, ok = set.Lookup("missing")
	require.False(t, ok)

	// Results are copies: changing them leaves the set alone.
	specs[0].Name = "changed"
	specs[0].Parameters[0] = 'X'
	require.Equal(t, "zeta", set.Specs()[0].Name)
	require.Equal(t, byte('{'), set.Specs()[0].Parameters[0])
	tools := set.Tools()
	tools[0] = nil
	require.NotNil(t, set.Tools()[0])
}

func TestSetWithReturnsACopy(t *testing.T) {
	t.Parallel()
	base, err := tool.NewSet(named("a"))
	require.NoError(t, err)

	more, err := base.With(named("b"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, more.Names())
	require.Equal(t, []string{"a"}, base.Names(), "With must not change the receiver")

	_, err = base.With(named("a"))
	require.ErrorContains(t, err, `duplicate tool name "a"`)
}

func TestNilSetIsEmpty(t *testing.T) {
	t.Parallel()
	var set *tool.Set
	require.Zero(t, set.Len())
	require.Nil(t, set.Specs())
	require.Nil(t, set.Tools())
	require.Nil(t, set.Names())
	_, ok := set.Lookup("a")
	require.False(t, ok)
	grown, err := set.With(named("a"))
	require.NoError(t, err)
	require.Equal(t, 1, grown.Len())
}
