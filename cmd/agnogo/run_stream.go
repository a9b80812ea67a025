package main

import (
	"cmp"
	"fmt"
	"io"
	"iter"
	"strings"

	agnorun "github.com/agnogo/agnogo/run"
)

// How `agnogo run --stream` (and `agnogo run` on a terminal) shows a run
// as it happens.

// streamRun prints a run's events as they come: as text for people, or as
// one JSON line each. spin, when not nil, is shown while nothing is printed
// and closed before the run's end is reported.
func (c *cli) streamRun(events iter.Seq2[agnorun.Event, error], runnerID string, out io.Writer, asJSON bool, spin *spinner) error {
	defer spin.close()
	printer := &streamPrinter{out: out, atLineStart: true, spinner: spin}
	var final *agnorun.Output
	for event, err := range events {
		if err != nil {
			spin.close()
			printer.endLine()
			return err
		}
		if asJSON {
			if err := writeJSONLine(out, event); err != nil {
				return err
			}
		} else {
			printer.print(event)
		}
		if terminal := outputOf(event); terminal != nil {
			final = terminal
		}
	}
	spin.close()
	printer.endLine()
	if final == nil {
		return fmt.Errorf("agent %s ended its run without a final event", runnerID)
	}
	return c.report(final, nil, out, reportOptions{status: !asJSON})
}

// streamPrinter renders events as text: answer deltas as they arrive, tool
// calls on lines of their own. In a team's stream, the members' events
// (*agnorun.MemberEvent) show as their tool calls only, indented and
// prefixed with the member's id: the member's answer is the result of the
// team's delegation, shown on the delegation's tool line, and the answer
// printed is the team's.
type streamPrinter struct {
	out io.Writer
	// spinner, when not nil, is erased before anything is printed and shown
	// again while a tool or the model works.
	spinner     *spinner
	atLineStart bool
	// streamed records that answer text was printed, so the completed
	// event's copy of it is not printed again.
	streamed bool
}

func (p *streamPrinter) write(text string) {
	if text == "" {
		return
	}
	p.spinner.hide()
	fmt.Fprint(p.out, text)
	p.atLineStart = strings.HasSuffix(text, "\n")
}

// endLine ends a line of answer text before a line of another kind.
func (p *streamPrinter) endLine() {
	if !p.atLineStart {
		p.write("\n")
	}
}

func (p *streamPrinter) print(event agnorun.Event) {
	switch e := event.(type) {
	case *agnorun.RunContent:
		text := contentText(e.Content)
		p.write(text)
		p.streamed = p.streamed || text != ""
	case *agnorun.ToolCallStarted:
		p.endLine()
		if e.Tool != nil {
			p.write(fmt.Sprintf("→ tool %s %s\n", e.Tool.ToolName, compactJSON(e.Tool.ToolArgs)))
			p.spinner.wait("running " + e.Tool.ToolName + "…")
		}
	case *agnorun.ToolCallCompleted:
		p.endLine()
		if e.Tool != nil {
			result := contentText(e.Content)
			if e.Tool.Result != nil {
				result = *e.Tool.Result
			}
			p.write(fmt.Sprintf("← %s: %s\n", e.Tool.ToolName, firstLine(result)))
			p.spinner.wait(labelThinking)
		}
	case *agnorun.ToolCallError:
		p.endLine()
		if e.Tool != nil {
			p.write(fmt.Sprintf("← %s failed: %s\n", e.Tool.ToolName, firstLine(e.Error)))
			p.spinner.wait(labelThinking)
		}
	case *agnorun.RunCompleted:
		if !p.streamed {
			p.write(withNewline(contentText(e.Content)))
		}
		p.endLine()
	case *agnorun.RunPaused:
		p.spinner.hide()
		p.endLine()
		printRequirements(p.out, e.Requirements)
		printStepRequirements(p.out, e.StepRequirements)
	case *agnorun.WorkflowEvent:
		p.printStep(e)
	case *agnorun.MemberEvent:
		p.printMember(e.Event)
	}
}

// printStep renders a workflow's step event: a line as each step starts,
// fails or waits.
func (p *streamPrinter) printStep(e *agnorun.WorkflowEvent) {
	switch e.Name {
	case agnorun.EventStepStarted:
		p.endLine()
		p.write(fmt.Sprintf("▸ step %s\n", e.StepName))
		p.spinner.wait(e.StepName + " is working…")
	case agnorun.EventStepError:
		p.endLine()
		p.write(fmt.Sprintf("✗ step %s failed: %s\n", e.StepName, firstLine(e.Error)))
	case agnorun.EventConditionExecutionStarted:
		if e.ConditionResult != nil {
			p.endLine()
			p.write(fmt.Sprintf("▸ condition %s: %t\n", e.StepName, *e.ConditionResult))
		}
	case agnorun.EventRouterExecutionStarted:
		p.endLine()
		p.write(fmt.Sprintf("▸ router %s chose %s\n", e.StepName, strings.Join(e.SelectedSteps, ", ")))
	case agnorun.EventLoopIterationStarted:
		if e.Iteration != nil {
			p.endLine()
			p.write(fmt.Sprintf("▸ loop %s: iteration %d\n", e.StepName, *e.Iteration))
		}
	}
}

// memberIndent starts each line of a member's event.
const memberIndent = "  "

// printMember renders an event of a team member's run: its tool calls,
// indented under the team's delegation; the rest only moves the spinner.
func (p *streamPrinter) printMember(event agnorun.Event) {
	base := event.Base()
	member := cmp.Or(base.AgentID, base.TeamID, "member")
	working := member + " is working…"
	switch e := event.(type) {
	case *agnorun.RunStarted:
		p.spinner.wait(working)
	case *agnorun.ToolCallStarted:
		if e.Tool != nil {
			p.endLine()
			p.write(fmt.Sprintf("%s[%s] → tool %s %s\n", memberIndent, member, e.Tool.ToolName, compactJSON(e.Tool.ToolArgs)))
			p.spinner.wait(member + ": running " + e.Tool.ToolName + "…")
		}
	case *agnorun.ToolCallCompleted:
		if e.Tool != nil {
			result := contentText(e.Content)
			if e.Tool.Result != nil {
				result = *e.Tool.Result
			}
			p.endLine()
			p.write(fmt.Sprintf("%s[%s] ← %s: %s\n", memberIndent, member, e.Tool.ToolName, firstLine(result)))
			p.spinner.wait(working)
		}
	case *agnorun.ToolCallError:
		if e.Tool != nil {
			p.endLine()
			p.write(fmt.Sprintf("%s[%s] ← %s failed: %s\n", memberIndent, member, e.Tool.ToolName, firstLine(e.Error)))
			p.spinner.wait(working)
		}
	}
}

// maxResultLine caps the tool result shown on a tool line.
const maxResultLine = 120

// firstLine is the first line of text, shortened for a tool line.
func firstLine(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if runes := []rune(line); len(runes) > maxResultLine {
		line = string(runes[:maxResultLine]) + "…"
	}
	return line
}
