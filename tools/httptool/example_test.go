package httptool_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/httptool"
)

func ExampleNew() {
	// A stand-in for an API on the network.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q,"token":%q}`, r.URL.Path, r.Header.Get("Authorization"))
	}))
	defer api.Close()

	kit, err := httptool.New(httptool.Config{
		// AllowHosts lets the toolkit reach the local stand-in, which the
		// address policy refuses otherwise.
		Network:        toolkit.Network{BaseURL: api.URL + "/v1", AllowHosts: []string{"127.0.0.1"}},
		DefaultHeaders: map[string]string{"Authorization": "Bearer demo"},
	})
	if err != nil {
		panic(err)
	}
	tools, err := tool.NewSet(kit.Tools...)
	if err != nil {
		panic(err)
	}
	calls := []run.ToolCall{
		{ID: "call_1", Function: run.ToolCallFunction{Name: "http_request", Arguments: `{"url":"/items/1"}`}},
		{ID: "call_2", Function: run.ToolCallFunction{Name: "http_write", Arguments: `{"method":"DELETE","url":"/items/1"}`}},
	}
	for _, outcome := range tool.Execute(context.Background(), tools, calls, tool.ExecuteOptions{}) {
		if outcome.Paused() {
			fmt.Printf("%s: waiting for confirmation\n", outcome.Execution.ToolCallID)
			continue
		}
		fmt.Printf("%s: %s\n", outcome.Execution.ToolCallID, *outcome.Execution.Result)
	}
	// Output:
	// call_1: {"status":200,"headers":{"content-length":"44","content-type":"application/json"},"body":"{\"path\":\"/v1/items/1\",\"token\":\"Bearer demo\"}","truncated":false}
	// call_2: waiting for confirmation
}
