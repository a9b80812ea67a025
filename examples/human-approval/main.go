// Command human-approval pauses an agent's run before a tool with side
// effects runs, asks a person, and continues the run with the answer. A
// tool built with RequiresConfirmation never runs on the model's say-so:
// the run ends PAUSED with a requirement per call, the program confirms or
// rejects each, and Continue runs the confirmed calls (a rejected one is
// reported to the model as rejected) and lets the model answer.
//
//	go run ./examples/human-approval                     # a scripted model; answer y or n
//	echo y | go run ./examples/human-approval
//	OPENAI_API_KEY=sk-… go run ./examples/human-approval -model gpt-5-mini
//
// Over HTTP the same run ends with a RunPaused event; the client sends the
// resolutions to POST /agents/{agent_id}/runs/{run_id}/continue as the form
// field tools, a JSON array of the paused tool executions with
// "confirmed": true or false.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// emailArgs are the arguments of send_email.
type emailArgs struct {
	To      string `json:"to" jsonschema:"the recipient's address"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

func main() {
	if err := ask(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "human-approval:", err)
		os.Exit(1)
	}
}

func ask(stdin io.Reader, stdout io.Writer) error {
	modelName := flag.String("model", "scripted", `"scripted", or an OpenAI model id such as gpt-5-mini`)
	request := flag.String("request", "Email ada@example.com that the report is ready.", "what to ask the agent")
	flag.Parse()
	ctx := context.Background()

	sendEmail, err := tool.New(tool.Config{Name: "send_email", Description: "Send an email.", RequiresConfirmation: true},
		func(ctx context.Context, args emailArgs) (string, error) {
			return "sent to " + args.To, nil // a real tool would send it here
		})
	if err != nil {
		return err
	}
	m, err := newModel(*modelName)
	if err != nil {
		return err
	}
	assistant, err := agent.New(agent.Config{ID: "mailer", Model: m, Tools: []tool.Tool{sendEmail},
		Instructions: "You send the emails the user asks for with send_email."})
	if err != nil {
		return err
	}

	out, err := assistant.Run(ctx, &run.Input{InputContent: *request})
	if err != nil {
		return err
	}
	answers := bufio.NewScanner(stdin)
	for out.Status == run.StatusPaused {
		for _, req := range out.ActiveRequirements() {
			call := req.ToolExecution
			args, _ := json.Marshal(call.ToolArgs)
			fmt.Fprintf(stdout, "The agent wants to call %s(%s). Allow? [y/N] ", call.ToolName, args)
			answer := ""
			if answers.Scan() {
				answer = strings.TrimSpace(answers.Text())
			}
			fmt.Fprintln(stdout)
			if strings.EqualFold(answer, "y") || strings.EqualFold(answer, "yes") {
				err = req.Confirm()
			} else {
				err = req.Reject("the user said no")
			}
			if err != nil {
				return err
			}
		}
		// Without a store the paused run is handed back whole; with one,
		// RunID is enough.
		out, err = assistant.ContinueRun(ctx, &agent.ContinueRequest{Run: out, Tools: out.Tools})
		if err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, out.ContentString())
	return nil
}

// newModel is the scripted model, which needs no key or network, or an
// OpenAI model (OPENAI_API_KEY; OPENAI_BASE_URL for another server).
func newModel(name string) (model.Model, error) {
	if name != "scripted" {
		return openai.New(openai.Config{ID: name})
	}
	return scripted.New([]scripted.Reply{
		scripted.ToolCall("send_email", `{"to":"ada@example.com","subject":"Report","body":"The report is ready."}`),
		// The tool's result, or the rejection, is the last message.
		scripted.Respond(func(req *model.Request) scripted.Reply {
			return scripted.Text("send_email: " + req.Messages[len(req.Messages)-1].ContentString())
		}),
	}), nil
}
