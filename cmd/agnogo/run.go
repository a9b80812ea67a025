package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agnogo/agnogo/config"
	"github.com/agnogo/agnogo/observe"
	agnorun "github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
)

// defaultConfigPath is the config file `agnogo run` reads when --config is
// not given and the file exists.
const defaultConfigPath = "agnogo.yaml"

// runFlags are the flags of `agnogo run`.
type runFlags struct {
	config  string
	db      string
	session string
	user    string
	json    bool
	stream  bool
	// continueRun is the paused run --continue names; approve and reject
	// say how to resolve its confirmations.
	continueRun string
	approve     bool
	reject      bool
}

func (c *cli) runCommand() *cobra.Command {
	var flags runFlags
	cmd := &cobra.Command{
		Use:   "run AGENT|TEAM MESSAGE | run --continue RUN_ID --approve|--reject",
		Short: "Run an agent or a team once, in this process, and print its answer",
		Long: `Run sends MESSAGE to the agent AGENT and prints the answer on stdout, then a
status line (status, session and run ids, tokens) on stderr. The agent runs in
this process, on the database of the config file (or --db), so the run is
stored and --session continues an earlier conversation.

AGENT may also be the id of a team of the config (its teams key): the team's
leader delegates to its members in this process and the answer printed is
the team's. Each member run is stored in the team's session with the team's
run as its parent_run_id. --stream shows each delegation as a tool line and
the members' own tool calls indented beneath it, prefixed with the member's
id.

The config is --config, else ./agnogo.yaml when it exists, else the default:
one "assistant" agent on the model named by AGNOGO_MODEL (openai:gpt-5-mini
unless set; anthropic:ID and ollama:NAME also work), credentials from
OPENAI_API_KEY or ANTHROPIC_API_KEY. See docs/config.md.

--json prints the whole run (RunOutput) as JSON instead. --stream prints the
answer as it is generated, with a line for each tool call; with --json too,
it prints each event as one JSON line. When stdout is a terminal (and --json
is not given) the run is shown as --stream shows it, with a spinner on stderr
while the model or a tool works; piped or redirected output is unchanged.

A run paused for the confirmation of tool calls is continued with
--continue RUN_ID and --approve (the tool calls run) or --reject (they do
not, and the model is told so); the run names its agent, so AGENT and
MESSAGE are not given. Runs waiting for user input or an external result are
continued through the AgentOS API (POST /agents/{id}/runs/{run_id}/continue).

Exit status: 0 when the run completed; 1 when it failed, was cancelled
(Ctrl-C), paused for a confirmation, or the run to continue was not found or
not paused; 2 for a usage error, an invalid config file or an unknown agent
or team.`,
		Example: `  agnogo run assistant "What is the capital of France?"
  agnogo run research "Compare SQLite and PostgreSQL for a small team" --stream
  agnogo run --config agnogo.yaml coder "Summarize README.md" --stream
  agnogo run assistant "And of Italy?" --session 0198c0de-... --json
  agnogo run --continue 0198c0df-... --approve`,
		Args: func(_ *cobra.Command, args []string) error {
			if flags.continueRun != "" {
				if len(args) != 0 {
					return usagef("--continue takes no AGENT or MESSAGE (the run names its agent), got %d argument(s)", len(args))
				}
				return nil
			}
			if len(args) != 2 {
				return usagef(`run takes AGENT and MESSAGE, got %d argument(s); quote the message: agnogo run assistant "hello there"`, len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if flags.continueRun != "" {
				return c.continuePaused(cmd, flags)
			}
			if flags.approve || flags.reject {
				return usagef("--approve and --reject go with --continue RUN_ID")
			}
			return c.runAgent(cmd, flags, args[0], args[1])
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.config, "config", "", "config file (YAML); defaults to ./agnogo.yaml when it exists, else the default assistant")
	f.StringVar(&flags.db, "db", "", "database URL, overriding the config's db (default "+defaultDB+")")
	f.StringVar(&flags.session, "session", "", "session id to continue (default: a new session); with --continue, the run's session")
	f.StringVar(&flags.user, "user", "", "user id that owns the run; with --continue, only that user's run is found")
	f.BoolVar(&flags.json, "json", false, "print the run (RunOutput) as JSON; with --stream, each event as a JSON line")
	f.BoolVar(&flags.stream, "stream", false, "print the answer as it arrives, and tool calls as lines")
	f.StringVar(&flags.continueRun, "continue", "", "continue the paused run RUN_ID (with --approve or --reject)")
	f.BoolVar(&flags.approve, "approve", false, "with --continue: confirm the tool calls the run waits for")
	f.BoolVar(&flags.reject, "reject", false, "with --continue: reject the tool calls the run waits for")
	return cmd
}

// runAgent runs the agent or team agentID once on message and presents the
// run.
func (c *cli) runAgent(cmd *cobra.Command, flags runFlags, agentID, message string) error {
	ctx := cmd.Context()
	if flags.db != "" {
		if _, err := dburl.Parse(flags.db); err != nil {
			return usagef("--db: %v", err)
		}
	}
	file, err := loadRunConfig(flags.config)
	if err != nil {
		return err
	}
	agentOS, err := buildAgents(ctx, file, flags.db)
	if err != nil {
		return err
	}
	defer agentOS.Close()
	ctx = observe.With(ctx, agentOS.Observer) // traced with tracing on, like a server's runs

	runner, err := agentOS.Runner(agentID)
	if errors.Is(err, config.ErrUnknownAgent) {
		return &usageError{err: err}
	}
	if err != nil {
		return err
	}

	in := &agnorun.Input{InputContent: message, SessionID: flags.session, UserID: flags.user}
	return c.present(ctx, cmd.OutOrStdout(), flags, runner.ID(), runExecution{
		stream:  func(ctx context.Context) iter.Seq2[agnorun.Event, error] { return runner.Stream(ctx, in) },
		collect: func(ctx context.Context) (*agnorun.Output, error) { return execute(ctx, runner, in) },
	})
}

// runExecution is a run to present, as events or whole: a new run or a
// continued one.
type runExecution struct {
	stream  func(context.Context) iter.Seq2[agnorun.Event, error]
	collect func(context.Context) (*agnorun.Output, error)
}

// present executes a run and prints it as the flags ask: the whole run as
// JSON, its events as they come (--stream, or on a terminal, with a spinner
// while the model works), or its answer at the end.
func (c *cli) present(ctx context.Context, out io.Writer, flags runFlags, runnerID string, exec runExecution) error {
	live := !flags.json && isTerminal(out)
	if flags.stream || live {
		var spin *spinner
		if live && canAnimate(c.stderr) {
			spin = startSpinner(c.stderr, labelThinking)
		}
		return c.streamRun(exec.stream(ctx), runnerID, out, flags.json, spin)
	}
	output, runErr := exec.collect(ctx)
	if output == nil {
		return runErr
	}
	if flags.json {
		if err := writeJSON(out, output); err != nil {
			return err
		}
	}
	return c.report(output, runErr, out, reportOptions{content: !flags.json, status: !flags.json})
}

// buildAgents opens the database (db, else the file's) and builds the
// file's agents; a config the build refuses is a usage error.
func buildAgents(ctx context.Context, file *config.File, db string) (*config.OS, error) {
	agentOS, err := file.Build(ctx, config.BuildOptions{DB: db})
	var configErr *config.Error
	if errors.As(err, &configErr) || errors.Is(err, storage.ErrInvalid) {
		return nil, &usageError{err: err}
	}
	return agentOS, err
}

// loadRunConfig reads the config file named by --config, else ./agnogo.yaml
// when it exists, else returns the default configuration.
func loadRunConfig(path string) (*config.File, error) {
	explicit := path != ""
	if !explicit {
		if _, err := os.Stat(defaultConfigPath); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("config file: %w", err)
			}
			file, err := config.Default(os.Getenv)
			if err != nil {
				return nil, &usageError{err: err}
			}
			return file, nil
		}
		path = defaultConfigPath
	}
	file, err := config.Load(path)
	var configErr *config.Error
	switch {
	case errors.As(err, &configErr):
		return nil, &usageError{err: err}
	case err != nil && explicit && errors.Is(err, fs.ErrNotExist):
		return nil, usagef("--config: %v", err)
	case err != nil:
		return nil, err
	}
	return file, nil
}

// outputRunner is a runner that returns the whole run, as agents do.
type outputRunner interface {
	Run(ctx context.Context, in *agnorun.Input) (*agnorun.Output, error)
}

// execute runs in to its end and returns the run. A runner without a Run
// method is streamed and the run rebuilt from its terminal event.
func execute(ctx context.Context, runner agnorun.Runner, in *agnorun.Input) (*agnorun.Output, error) {
	if r, ok := runner.(outputRunner); ok {
		return r.Run(ctx, in)
	}
	return collect(runner.Stream(ctx, in), runner.ID())
}

// collect runs events to their end and rebuilds the run from its terminal
// event.
func collect(events iter.Seq2[agnorun.Event, error], runnerID string) (*agnorun.Output, error) {
	var output *agnorun.Output
	for event, err := range events {
		if err != nil {
			return output, err
		}
		if terminal := outputOf(event); terminal != nil {
			output = terminal
		}
	}
	if output == nil {
		return nil, fmt.Errorf("agent %s ended its run without a final event", runnerID)
	}
	if output.Status == agnorun.StatusError {
		return output, errors.New(output.ContentString())
	}
	return output, nil
}

// outputOf returns the run a terminal event describes, or nil for any other
// event — a member's event passed on in a team's stream
// (*agnorun.MemberEvent) included: a member's end is not the team's.
func outputOf(event agnorun.Event) *agnorun.Output {
	base := event.Base()
	output := &agnorun.Output{RunID: base.RunID, AgentID: base.AgentID, AgentName: base.AgentName, TeamID: base.TeamID,
		TeamName: base.TeamName, WorkflowID: base.WorkflowID, WorkflowName: base.WorkflowName, SessionID: base.SessionID,
		ParentRunID: base.ParentRunID}
	switch e := event.(type) {
	case *agnorun.RunCompleted:
		output.Status, output.Content, output.ContentType, output.Metrics = agnorun.StatusCompleted, e.Content, e.ContentType, e.Metrics
		output.StepResults = e.StepResults
	case *agnorun.RunError:
		output.Status, output.Content = agnorun.StatusError, e.Content
	case *agnorun.RunCancelled:
		output.Status = agnorun.StatusCancelled
	case *agnorun.RunPaused:
		output.Status, output.Requirements = agnorun.StatusPaused, e.Requirements
		output.StepRequirements, output.PausedStepName, output.PausedStepIndex = e.StepRequirements, e.PausedStepName, e.PausedStepIndex
	default:
		return nil
	}
	return output
}

// reportOptions say what [cli.report] prints besides the error.
type reportOptions struct {
	// content prints the answer, or a paused run's requirements, on stdout.
	content bool
	// status prints the status line of a completed run on stderr.
	status bool
}

// report prints the end of a finished run and returns the error that sets
// the exit status: nil only when the run completed.
func (c *cli) report(output *agnorun.Output, runErr error, out io.Writer, opts reportOptions) error {
	switch output.Status {
	case agnorun.StatusCompleted:
		if opts.content {
			if content := output.ContentString(); content != "" {
				fmt.Fprint(out, withNewline(content))
			}
		}
		if opts.status {
			fmt.Fprintln(c.stderr, statusLine(output))
		}
		return nil
	case agnorun.StatusPaused:
		if isWorkflowRun(output) {
			return c.reportWorkflowPause(output, out, opts)
		}
		pending := output.ActiveRequirements()
		if opts.content {
			printRequirements(out, pending)
		}
		waiting := fmt.Sprintf("run %s paused for %d %s", output.RunID, len(pending), plural(len(pending), "requirement", "requirements"))
		if onlyConfirmations(pending) {
			return fmt.Errorf("%s; continue it with agnogo run --continue %s --approve (or --reject)", waiting, output.RunID)
		}
		return fmt.Errorf("%s; continue it through the AgentOS API (POST %s/runs/%s/continue)", waiting, runnerPath(output), output.RunID)
	case agnorun.StatusCancelled:
		return fmt.Errorf("run %s cancelled", output.RunID)
	}
	message := output.ContentString()
	if runErr != nil {
		message = runErr.Error()
	}
	return fmt.Errorf("run %s failed: %s", output.RunID, message)
}

// runnerPath is the AgentOS path of the agent or team that ran output:
// /agents/ID, or /teams/ID for a team's own run.
func runnerPath(output *agnorun.Output) string {
	switch {
	case isWorkflowRun(output):
		return "/workflows/" + output.WorkflowID
	case output.AgentID == "" && output.TeamID != "":
		return "/teams/" + output.TeamID
	}
	return "/agents/" + output.AgentID
}

// isWorkflowRun reports whether output is a workflow's own run.
func isWorkflowRun(output *agnorun.Output) bool {
	return output.WorkflowID != "" && output.AgentID == "" && output.TeamID == ""
}

// reportWorkflowPause prints what a paused workflow run waits for and
// returns the error that says how to continue it.
func (c *cli) reportWorkflowPause(output *agnorun.Output, out io.Writer, opts reportOptions) error {
	if opts.content {
		printStepRequirements(out, output.StepRequirements)
	}
	waiting := fmt.Sprintf("workflow run %s paused at step %s", output.RunID, output.PausedStepName)
	if _, err := stepAnswers(output, true); err == nil {
		return fmt.Errorf("%s; continue it with agnogo run --continue %s --approve (or --reject)", waiting, output.RunID)
	}
	return fmt.Errorf("%s; continue it through the AgentOS API (POST %s/runs/%s/continue with step_requirements)", waiting, runnerPath(output), output.RunID)
}

// printStepRequirements lists what a paused workflow waits for, one line
// each.
func printStepRequirements(out io.Writer, requirements []*agnorun.StepRequirement) {
	for _, req := range requirements {
		var what string
		switch {
		case req.RequiresExecutorInput:
			what = fmt.Sprintf("step %s: its %s %s waits", req.StepName, req.ExecutorType, req.ExecutorID)
			printRequirements(out, req.ExecutorRequirements)
		case req.RequiresOutputReview:
			what = fmt.Sprintf("review the output of step %s: %s", req.StepName, firstLine(req.StepOutput.ContentString()))
		case req.RequiresRouteSelection:
			what = fmt.Sprintf("choose a route of step %s from %s", req.StepName, strings.Join(req.AvailableChoices, ", "))
		case req.RequiresUserInput && !req.RequiresConfirmation:
			what = fmt.Sprintf("give input for step %s", req.StepName)
		default:
			what = fmt.Sprintf("confirm step %s", req.StepName)
		}
		if msg := cmp.Or(req.ConfirmationMessage, req.OutputReviewMessage, req.UserInputMessage); msg != "" {
			what += " (" + msg + ")"
		}
		fmt.Fprintf(out, "paused: %s [step_id %s]\n", what, req.StepID)
	}
}

// statusLine is the line printed on stderr after a completed run.
func statusLine(output *agnorun.Output) string {
	line := fmt.Sprintf("%s  session %s  run %s", output.Status, output.SessionID, output.RunID)
	if m := output.Metrics; m != nil && (m.InputTokens > 0 || m.OutputTokens > 0) {
		line += fmt.Sprintf("  tokens %d in / %d out", m.InputTokens, m.OutputTokens)
	}
	return line
}

// printRequirements lists what a paused run waits for, one line each.
func printRequirements(out io.Writer, requirements []*agnorun.Requirement) {
	for _, req := range requirements {
		what := requirementAction(req)
		name, args := "?", "{}"
		if tool := req.ToolExecution; tool != nil {
			name, args = tool.ToolName, compactJSON(tool.ToolArgs)
		}
		fmt.Fprintf(out, "paused: %s %s %s (requirement %s)\n", what, name, args, req.ID)
	}
}

// requirementAction says what a requirement waits for, as a verb phrase.
func requirementAction(req *agnorun.Requirement) string {
	switch {
	case req.NeedsConfirmation():
		return "confirm"
	case req.NeedsUserInput():
		return "give input for"
	case req.NeedsUserFeedback():
		return "give feedback on"
	case req.NeedsExternalExecution():
		return "run externally"
	}
	return "resolve"
}

// onlyConfirmations reports whether every requirement waits for a
// confirmation, which agnogo run --continue gives.
func onlyConfirmations(requirements []*agnorun.Requirement) bool {
	for _, req := range requirements {
		if !req.NeedsConfirmation() {
			return false
		}
	}
	return len(requirements) > 0
}

// contentText renders content as text: a string as is, anything else as JSON.
func contentText(content any) string {
	switch c := content.(type) {
	case nil:
		return ""
	case string:
		return c
	}
	return compactJSON(content)
}

// compactJSON renders v as one line of JSON.
func compactJSON(v any) string {
	if v == nil {
		return "{}"
	}
	encoded, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(encoded)
}

func withNewline(text string) string {
	if text == "" || strings.HasSuffix(text, "\n") {
		return text
	}
	return text + "\n"
}

// writeJSON prints v as indented JSON.
func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONLine prints v as one line of JSON.
func writeJSONLine(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
