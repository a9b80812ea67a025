package run

import (
	"bytes"
	"encoding/json"
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
	for _, seed := range []string{`{"a":null}`, `[null,{"b":null}]`, `{"a":[{"b":{"c":null}}]}`, `"x"`, `1`,
		` { "a" : null , "b" : [ 1 , null ] , "c\\\"" : "n\\u0075ll" } `, `{"a":nullx}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := dropNulls([]byte(in))
		valid := json.Valid([]byte(in))
		if err != nil {
			require.False(t, valid, "valid JSON is never refused: %q", in)
			return
		}
		if !valid {
			require.Equal(t, in, string(out), "what holds no null passes through as it was")
			return
		}
		require.True(t, json.Valid(out), "the result is JSON: %q → %q", in, out)
		again, err := dropNulls(out)
		require.NoError(t, err)
		require.Equal(t, string(out), string(again), "dropping nulls twice changes nothing")
		require.Equal(t, withoutNulls(decodeAny(t, []byte(in))), decodeAny(t, out), "the same value, less its null members: %q → %q", in, out)
	})
}

// decodeAny decodes JSON keeping numbers as written.
func decodeAny(t *testing.T, data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

// withoutNulls is a decoded value less its null object members, at any
// depth: what dropNulls must produce.
func withoutNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, member := range v {
			if member == nil {
				delete(v, k)
				continue
			}
			v[k] = withoutNulls(member)
		}
	case []any:
		for i := range v {
			v[i] = withoutNulls(v[i])
		}
	}
	return v
}
