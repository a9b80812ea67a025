package codemode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"

	"go.starlark.net/starlark"
)

// toGo converts a Starlark value to what encoding/json encodes: None,
// bools, numbers, strings, lists, tuples and dicts with string keys.
func toGo(v starlark.Value) (any, error) {
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(v), nil
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			return i, nil
		}
		return json.Number(v.String()), nil
	case starlark.Float:
		f := float64(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%v is not a number JSON can hold", v)
		}
		return f, nil
	case starlark.String:
		return string(v), nil
	case *starlark.List:
		out := make([]any, v.Len())
		for i := range v.Len() {
			item, err := toGo(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = item
		}
		return out, nil
	case starlark.Tuple:
		out := make([]any, len(v))
		for i, item := range v {
			converted, err := toGo(item)
			if err != nil {
				return nil, err
			}
			out[i] = converted
		}
		return out, nil
	case *starlark.Dict:
		out := make(map[string]any, v.Len())
		for _, item := range v.Items() {
			key, ok := item[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is not a string", item[0])
			}
			value, err := toGo(item[1])
			if err != nil {
				return nil, err
			}
			out[string(key)] = value
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s cannot be passed to a tool (use None, bools, numbers, strings, lists and dicts)", v.Type())
}

// fromResult is a tool's result as a program sees it: JSON decoded into
// dicts, lists and numbers, any other text as a string.
func fromResult(result string) starlark.Value {
	trimmed := bytes.TrimSpace([]byte(result))
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return starlark.String(result)
	}
	decoder := json.NewDecoder(bytes.NewReader(trimmed))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil || decoder.More() {
		return starlark.String(result)
	}
	return fromGo(value)
}

// fromGo converts decoded JSON to Starlark.
func fromGo(v any) starlark.Value {
	switch v := v.(type) {
	case nil:
		return starlark.None
	case bool:
		return starlark.Bool(v)
	case json.Number:
		if i, ok := new(big.Int).SetString(v.String(), 10); ok {
			return starlark.MakeBigInt(i)
		}
		f, err := v.Float64()
		if err != nil {
			return starlark.String(v.String())
		}
		return starlark.Float(f)
	case string:
		return starlark.String(v)
	case []any:
		items := make([]starlark.Value, len(v))
		for i, item := range v {
			items[i] = fromGo(item)
		}
		return starlark.NewList(items)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dict := starlark.NewDict(len(v))
		for _, k := range keys {
			_ = dict.SetKey(starlark.String(k), fromGo(v[k]))
		}
		return dict
	}
	return starlark.String(fmt.Sprint(v))
}

// display renders a program's final value: JSON when it is plain data,
// else Starlark's own rendering.
func display(v starlark.Value) string {
	if s, ok := v.(starlark.String); ok {
		return string(s)
	}
	if plain, err := toGo(v); err == nil {
		if encoded, err := json.Marshal(plain); err == nil {
			return string(encoded)
		}
	}
	return v.String()
}
