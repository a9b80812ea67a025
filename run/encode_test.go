package run

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDropNulls(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"a":null,"b":2}`, `{"b":2}`},
		{`{"a":{"x":null,"y":[1,null,{"z":null,"w":"null"}]},"b":null}`, `{"a":{"y":[1,null,{"w":"null"}]}}`},
		{`{"big":12345678901234567890,"s":"q\"uote\u003c"}`, `{"big":12345678901234567890,"s":"q\"uote\u003c"}`},
		{`{"only":null}`, `{}`},
	}
	for _, tt := range tests {
		got, err := dropNulls([]byte(tt.in))
		require.NoError(t, err, tt.in)
		require.JSONEq(t, tt.want, string(got), tt.in)
	}
	got, err := dropNulls([]byte(`{"b":1,"a":null,"c":2}`))
	require.NoError(t, err)
	require.Equal(t, `{"b":1,"c":2}`, string(got), "member order is kept")
}

func FuzzDropNulls(f *testing.F) {
	for _, seed := range []string{`{"a":null}`, `[null,{"b":null}]`, `{"a":[{"b":{"c":null}}]}`, `"x"`, `1`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := dropNulls([]byte(in))
		if err != nil {
			return
		}
		again, err := dropNulls(out)
		require.NoError(t, err)
		require.Equal(t, string(out), string(again), "dropping nulls twice changes nothing")
	})
}
