package openai_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/run"
)

// A model on OpenAI's Responses API; the key comes from $OPENAI_API_KEY.
func ExampleNew() {
	gpt, err := openai.New(openai.Config{ID: "gpt-5-mini", API: openai.APIResponses})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(gpt.Info().Provider, gpt.Info().ID)
}

// A local model served by Ollama, which speaks Chat Completions and needs no
// key.
func ExampleNew_ollama() {
	llama, err := openai.New(openai.Config{
		ID:       "llama3.2",
		BaseURL:  "http://localhost:11434/v1",
		Provider: "Ollama",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(llama.Info().Provider, llama.Info().ID)
}

// Streaming a reply: text as it arrives, then the complete reply.
func ExampleModel_Stream() {
	gpt, err := openai.New(openai.Config{ID: "gpt-5-mini"})
	if err != nil {
		log.Fatal(err)
	}
	req := &model.Request{Messages: []*run.Message{{Role: run.RoleUser, Content: "Write a haiku about Go."}}}
	for chunk, err := range gpt.Stream(context.Background(), req) {
		if err != nil {
			log.Fatalf("%v (retryable: %t)", err, model.IsRetryable(err))
		}
		fmt.Print(chunk.ContentDelta)
		if chunk.Response != nil {
			fmt.Printf("\n%d tokens\n", chunk.Response.Usage.TotalTokens)
		}
	}
}
