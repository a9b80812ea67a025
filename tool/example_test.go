package tool_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

type weatherArgs struct {
	City  string `json:"city" jsonschema:"the city to look up"`
	Units string `json:"units,omitempty" jsonschema:"celsius or fahrenheit; defaults to celsius"`
}

type weatherReport struct {
	City        string  `json:"city"`
	Temperature float64 `json:"temperature"`
}

func ExampleNew() {
	weather, err := tool.New(tool.Config{Name: "get_weather", Description: "Current weather in a city."},
		func(ctx context.Context, args weatherArgs) (weatherReport, error) {
			return weatherReport{City: args.City, Temperature: 21.5}, nil
		})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(weather.Spec().Parameters))

	result, err := weather.Call(context.Background(), []byte(`{"city":"Lisbon"}`))
	fmt.Println(result, err)

	// Arguments are checked against the schema before the function runs.
	_, err = weather.Call(context.Background(), []byte(`{"town":"Lisbon"}`))
	var argErr *tool.ArgumentError
	fmt.Println(errors.As(err, &argErr), err)
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"the city to look up"},"units":{"type":"string","description":"celsius or fahrenheit; defaults to celsius"}},"required":["city"],"additionalProperties":false}
	// {"city":"Lisbon","temperature":21.5} <nil>
	// true invalid arguments for tool get_weather: unexpected additional properties ["town"]
}

func ExampleExecute() {
	greet := tool.MustNew(tool.Config{Name: "greet"},
		func(ctx context.Context, args struct {
			Name string `json:"name"`
		}) (string, error) {
			return "Hello, " + args.Name + "!", nil
		})
	deleteAll := tool.MustNew(tool.Config{Name: "delete_all", RequiresConfirmation: true},
		func(ctx context.Context, args struct{}) (string, error) { return "deleted", nil })
	tools, err := tool.NewSet(greet, deleteAll)
	if err != nil {
		panic(err)
	}
	calls := []run.ToolCall{
		{ID: "call_1", Function: run.ToolCallFunction{Name: "greet", Arguments: `{"name":"Ada"}`}},
		{ID: "call_2", Function: run.ToolCallFunction{Name: "delete_all", Arguments: `{}`}},
		{ID: "call_3", Function: run.ToolCallFunction{Name: "fly", Arguments: `{}`}},
	}
	clock := func() time.Time { return time.Unix(1767000000, 0) }
	for _, outcome := range tool.Execute(context.Background(), tools, calls, tool.ExecuteOptions{Now: clock}) {
		exec := outcome.Execution
		switch {
		case outcome.Paused():
			fmt.Printf("%s: paused, requires confirmation: %t\n", exec.ToolCallID, exec.RequiresConfirmation)
		default:
			fmt.Printf("%s: %s (error: %t)\n", exec.ToolCallID, *exec.Result, *exec.ToolCallError)
		}
	}
	// Output:
	// call_1: Hello, Ada! (error: false)
	// call_2: paused, requires confirmation: true
	// call_3: unknown tool "fly"; available tools: greet, delete_all (error: true)
}
