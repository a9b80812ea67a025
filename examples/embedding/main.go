// Command embedding builds an agent and serves it as AgentOS from one Go
// program, with the defaults of `agnogo serve`: the same routes, bounds on
// clients, and graceful shutdown on Ctrl-C.
//
//	go run ./examples/embedding                          # a scripted model: no key, no network
//	OPENAI_API_KEY=sk-… go run ./examples/embedding -model gpt-5-mini
//	curl -F message=hello -F stream=false http://127.0.0.1:7777/agents/assistant/runs
//
// With -once it sends one run to itself, prints the answer and stops.
// OPENAI_BASE_URL points a non-scripted model at any OpenAI-compatible
// server (Ollama, vLLM, a gateway).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
)

func main() {
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, "embedding:", err)
		os.Exit(1)
	}
}

func serve() error {
	addr := flag.String("addr", agentos.DefaultAddr, "address to listen on, HOST:PORT")
	db := flag.String("db", "agnogo.db", "SQLite database file")
	modelName := flag.String("model", "scripted", `"scripted", or an OpenAI model id such as gpt-5-mini`)
	once := flag.Bool("once", false, "send one run to the server, print its answer and stop")
	flag.Parse()

	// Ctrl-C (or SIGTERM) ends ctx, which stops the server gracefully.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store, err := sqlite.Open(ctx, sqlite.Config{Path: *db})
	if err != nil {
		return err
	}
	defer store.Close()
	m, err := newModel(*modelName)
	if err != nil {
		return err
	}
	assistant, err := agent.New(agent.Config{
		ID:                  "assistant",
		Name:                "Assistant",
		Model:               m,
		Instructions:        "You are a helpful assistant.",
		Store:               store,
		AddHistoryToContext: true,
	})
	if err != nil {
		return err
	}
	agentOS, err := agentos.New(agentos.Config{Name: "Embedded AgentOS", Runners: []run.Runner{assistant}, Store: store})
	if err != nil {
		return err
	}
	if !*once {
		return agentOS.ListenAndServe(ctx, *addr, agentos.ServeOptions{})
	}

	// -once: serve on the address, ask one question, then stop serving.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 1)
	go func() { served <- agentOS.Serve(serveCtx, ln, agentos.ServeOptions{}) }()
	answer, askErr := ask(ctx, "http://"+ln.Addr().String(), "Hello! Who are you?")
	stopServing()
	if err := errors.Join(askErr, <-served); err != nil {
		return err
	}
	fmt.Println(answer)
	return nil
}

// newModel is the scripted model, which needs no key or network, or an
// OpenAI model (OPENAI_API_KEY; OPENAI_BASE_URL for another server).
func newModel(name string) (model.Model, error) {
	if name == "scripted" {
		return scripted.New([]scripted.Reply{scripted.Text("Hello! I am an agnogo agent, served from a Go program.")}), nil
	}
	return openai.New(openai.Config{ID: name})
}

// ask runs the assistant once through the HTTP API, as any AgentOS client
// does, and returns its answer.
func ask(ctx context.Context, baseURL, message string) (string, error) {
	form := url.Values{"message": {message}, "stream": {"false"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/agents/assistant/runs", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	var out struct {
		Status  string `json:"status"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusOK || out.Status != "COMPLETED" {
		return "", fmt.Errorf("run: HTTP %d: %s", resp.StatusCode, body)
	}
	return out.Content, nil
}
