// Command structured-output asks an agent for an answer shaped by a Go
// struct: agent.SchemaFor infers the JSON Schema from the struct, the model
// is asked for JSON matching it (natively, where the provider can), and the
// answer is validated before the run completes — one that does not match
// fails the run with an invalid_output error instead of reaching the
// program. The run's content is then the decoded object, and content_type
// the struct's name.
//
//	go run ./examples/structured-output                  # a scripted model: no key, no network
//	OPENAI_API_KEY=sk-… go run ./examples/structured-output -model gpt-5-mini
//
// Over HTTP, a client sends the schema with the run instead: the form field
// output_schema of POST /agents/{agent_id}/runs.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
)

// Recipe is the shape of the answer. Fields without omitempty are
// required.
type Recipe struct {
	Name        string   `json:"name" jsonschema:"the dish"`
	Minutes     int      `json:"minutes" jsonschema:"total preparation and cooking time"`
	Ingredients []string `json:"ingredients"`
	Steps       []string `json:"steps"`
}

func main() {
	if err := ask(); err != nil {
		fmt.Fprintln(os.Stderr, "structured-output:", err)
		os.Exit(1)
	}
}

func ask() error {
	modelName := flag.String("model", "scripted", `"scripted", or an OpenAI model id such as gpt-5-mini`)
	question := flag.String("question", "A quick recipe for pancakes, please.", "what to ask the agent")
	flag.Parse()
	ctx := context.Background()

	schema, err := agent.SchemaFor[Recipe]()
	if err != nil {
		return err
	}
	m, err := newModel(*modelName)
	if err != nil {
		return err
	}
	chef, err := agent.New(agent.Config{
		ID:           "chef",
		Model:        m,
		Instructions: "You write short, precise recipes.",
		OutputSchema: schema,
	})
	if err != nil {
		return err
	}
	out, err := chef.Run(ctx, &run.Input{InputContent: *question})
	if err != nil {
		return err
	}
	// out.Content holds the validated object; decode it into the struct.
	var recipe Recipe
	if err := json.Unmarshal([]byte(out.ContentString()), &recipe); err != nil {
		return fmt.Errorf("decode the %s answer: %w", out.ContentType, err)
	}
	fmt.Printf("%s (%d min, content_type %s)\n", recipe.Name, recipe.Minutes, out.ContentType)
	fmt.Println("ingredients:", strings.Join(recipe.Ingredients, ", "))
	for i, step := range recipe.Steps {
		fmt.Printf("%d. %s\n", i+1, step)
	}
	return nil
}

// newModel is the scripted model, which needs no key or network, or an
// OpenAI model (OPENAI_API_KEY; OPENAI_BASE_URL for another server).
func newModel(name string) (model.Model, error) {
	if name != "scripted" {
		return openai.New(openai.Config{ID: name})
	}
	return scripted.New([]scripted.Reply{scripted.Text(`{"name": "Pancakes", "minutes": 20,
		"ingredients": ["200 g flour", "2 eggs", "300 ml milk", "a pinch of salt"],
		"steps": ["Whisk everything into a smooth batter.", "Rest it 5 minutes.", "Fry ladlefuls in a hot buttered pan, 1 minute a side."]}`)}), nil
}
