// Command typed-tool gives an agent a tool written as a typed Go function:
// tool.New infers the JSON Schema the model sees from the arguments' struct
// (json names, `jsonschema` descriptions, omitempty for optional fields),
// validates every call against it before the function runs, and returns
// the result struct to the model as JSON.
//
//	go run ./examples/typed-tool                         # a scripted model: no key, no network
//	OPENAI_API_KEY=sk-… go run ./examples/typed-tool -model gpt-5-mini
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// weatherArgs are the tool's arguments; the schema the model gets is
// inferred from them.
type weatherArgs struct {
	City  string `json:"city" jsonschema:"the city to look up"`
	Units string `json:"units,omitempty" jsonschema:"celsius or fahrenheit; defaults to celsius"`
}

// weatherReport is the tool's result, sent to the model as JSON.
type weatherReport struct {
	City        string  `json:"city"`
	Temperature float64 `json:"temperature"`
	Units       string  `json:"units"`
	Sky         string  `json:"sky"`
}

// getWeather is the tool's function. A real one would call a weather API
// with ctx; an error it returns is reported to the model, not fatal.
func getWeather(ctx context.Context, args weatherArgs) (weatherReport, error) {
	report := weatherReport{City: args.City, Temperature: 21.5, Units: "celsius", Sky: "sunny"}
	if strings.EqualFold(args.Units, "fahrenheit") {
		report.Temperature, report.Units = 70.7, "fahrenheit"
	}
	return report, nil
}

func main() {
	if err := ask(); err != nil {
		fmt.Fprintln(os.Stderr, "typed-tool:", err)
		os.Exit(1)
	}
}

func ask() error {
	modelName := flag.String("model", "scripted", `"scripted", or an OpenAI model id such as gpt-5-mini`)
	question := flag.String("question", "What is the weather in Paris?", "what to ask the agent")
	flag.Parse()
	ctx := context.Background()

	weather, err := tool.New(tool.Config{Name: "get_weather", Description: "Current weather in a city."}, getWeather)
	if err != nil {
		return err
	}
	fmt.Printf("schema the model sees: %s\n", weather.Spec().Parameters)
	m, err := newModel(*modelName)
	if err != nil {
		return err
	}
	assistant, err := agent.New(agent.Config{
		ID:           "weather",
		Model:        m,
		Instructions: "Answer questions about the weather with the get_weather tool.",
		Tools:        []tool.Tool{weather},
	})
	if err != nil {
		return err
	}
	out, err := assistant.Run(ctx, &run.Input{InputContent: *question})
	if err != nil {
		return err
	}
	for _, call := range out.Tools {
		fmt.Printf("tool %s(%v) -> %s\n", call.ToolName, call.ToolArgs, deref(call.Result))
	}
	fmt.Println(out.ContentString())
	return nil
}

// newModel is the scripted model, which needs no key or network, or an
// OpenAI model (OPENAI_API_KEY; OPENAI_BASE_URL for another server).
func newModel(name string) (model.Model, error) {
	if name != "scripted" {
		return openai.New(openai.Config{ID: name})
	}
	return scripted.New([]scripted.Reply{
		// First the model calls the tool…
		scripted.ToolCall("get_weather", `{"city":"Paris"}`),
		// …then it answers from the tool's result, the last message.
		scripted.Respond(func(req *model.Request) scripted.Reply {
			result := req.Messages[len(req.Messages)-1].ContentString()
			return scripted.Text("According to get_weather: " + result)
		}),
	}), nil
}

// deref is *s, or "" when s is nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
