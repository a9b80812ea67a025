package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	starjson "go.starlark.net/lib/json"
	starmath "go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/tool"
)

// ToolName is the name of the one tool CodeMode gives the model.
const ToolName = "run_code"

// Defaults of [Config].
const (
	// DefaultMaxSteps bounds the Starlark steps of one program.
	DefaultMaxSteps = 10_000_000
	// DefaultTimeout bounds one program's run, its tool calls included.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxOutputBytes bounds what one program returns.
	DefaultMaxOutputBytes = 32 << 10
	// DefaultMaxToolCalls bounds the tool calls of one program.
	DefaultMaxToolCalls = 100
	// DefaultMaxSessions bounds the sessions whose variables are kept.
	DefaultMaxSessions = 1000
)

// Config tunes CodeMode. The zero value takes every default.
type Config struct {
	// MaxSteps bounds the Starlark execution steps of one program (a step
	// is roughly one bytecode instruction). Defaults to
	// [DefaultMaxSteps].
	MaxSteps uint64
	// Timeout bounds one program's run, its tool calls included. Defaults
	// to [DefaultTimeout].
	Timeout time.Duration
	// MaxOutputBytes bounds the text one program returns (what it prints
	// and its last expression's value); the rest is cut with a note.
	// Defaults to [DefaultMaxOutputBytes].
	MaxOutputBytes int
	// MaxToolCalls bounds the tool calls of one program. Defaults to
	// [DefaultMaxToolCalls].
	MaxToolCalls int
	// MaxSessions bounds the sessions whose variables this process keeps;
	// the least recently used are dropped first. Defaults to
	// [DefaultMaxSessions].
	MaxSessions int
	// Now is the clock for tool executions' timestamps. Defaults to
	// time.Now.
	Now func() time.Time
}

// CodeMode gives a model one tool, run_code, with which it writes a small
// Starlark program calling the agent's tools as functions. Build it with
// [New]; it is safe for concurrent use.
type CodeMode struct {
	cfg   Config
	tools *tool.Set
	specs []tool.Spec
	tool  tool.Tool
	// functions maps each Starlark function name to its tool's name: a
	// tool named get-weather is the function get_weather.
	functions map[string]string

	mu       sync.Mutex
	sessions map[string]*session
	clock    uint64 // for least-recently-used eviction
}

// session is the variables one session's programs share.
type session struct {
	mu       sync.Mutex // one program of a session at a time
	globals  starlark.StringDict
	lastUsed uint64
}

// codeArgs are run_code's arguments.
type codeArgs struct {
	Code string `json:"code" jsonschema:"the Starlark program to run"`
}

// New returns CodeMode over tools, the functions its programs may call.
// It fails on tools [tool.NewSet] refuses, or on one named like a
// Starlark built-in the programs need (print, json, math, …).
func New(tools []tool.Tool, cfg Config) (*CodeMode, error) {
	set, err := tool.NewSet(tools...)
	if err != nil {
		return nil, fmt.Errorf("codemode: %w", err)
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if cfg.MaxToolCalls <= 0 {
		cfg.MaxToolCalls = DefaultMaxToolCalls
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &CodeMode{cfg: cfg, tools: set, specs: set.Specs(), sessions: map[string]*session{}, functions: map[string]string{}}
	for _, spec := range c.specs {
		fn := functionName(spec.Name)
		if _, taken := starlark.Universe[fn]; taken || fn == "json" || fn == "math" || fn == lastName {
			return nil, fmt.Errorf("codemode: tool %q is named like a Starlark built-in; rename it", spec.Name)
		}
		if other, dup := c.functions[fn]; dup {
			return nil, fmt.Errorf("codemode: tools %q and %q are both the function %s; rename one", other, spec.Name, fn)
		}
		c.functions[fn] = spec.Name
	}
	c.tool, err = tool.Func(tool.Config{Name: ToolName, Description: c.description()}, mustSchema(), c.call)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// functionName is the Starlark function of a tool: its name with every
// character an identifier cannot hold turned into _, and a leading digit
// behind one.
func functionName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	if len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

// mustSchema is run_code's parameters schema.
func mustSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"the Starlark program to run"}},"required":["code"],"additionalProperties":false}`)
}

// Tools returns the one tool to give the model in place of the tools
// CodeMode wraps.
func (c *CodeMode) Tools() []tool.Tool { return []tool.Tool{&runCode{Tool: c.tool, c: c}} }

// description is run_code's description: how to write a program, and the
// functions it may call with their arguments.
func (c *CodeMode) description() string {
	var b strings.Builder
	b.WriteString("Run a program written in Starlark (a small Python dialect: no imports, no classes, no try/except, no file or network access) ")
	b.WriteString("to do several steps at once. Call the functions below with keyword arguments, use their results in the same program ")
	b.WriteString("(a JSON result comes back as dicts and lists, other results as strings), loop, branch and compute. ")
	b.WriteString("print() what you want to read; the value of a final expression is returned too. Variables you set stay for your next run_code ")
	b.WriteString("calls in this conversation. json.encode/json.decode and math are available. A failed function call stops the program with its error.\n\nFunctions:\n")
	for _, spec := range c.specs {
		b.WriteString("- ")
		b.WriteString(signature(spec))
		if spec.Description != "" {
			b.WriteString(": ")
			b.WriteString(strings.TrimSpace(spec.Description))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// signature renders a tool as a Starlark function: name(a: string, b?: number).
func signature(spec tool.Spec) string {
	name := functionName(spec.Name)
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(spec.Parameters, &schema)
	names := make([]string, 0, len(schema.Properties))
	for name := range schema.Properties {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := slices.Contains(schema.Required, names[i]), slices.Contains(schema.Required, names[j])
		if ri != rj {
			return ri
		}
		return names[i] < names[j]
	})
	params := make([]string, len(names))
	for i, name := range names {
		optional := ""
		if !slices.Contains(schema.Required, name) {
			optional = "?"
		}
		params[i] = fmt.Sprintf("%s%s: %v", name, optional, typeName(schema.Properties[name].Type))
	}
	return fmt.Sprintf("%s(%s)", name, strings.Join(params, ", "))
}

// typeName renders a JSON Schema type.
func typeName(t any) string {
	switch t := t.(type) {
	case string:
		return t
	case []any:
		parts := make([]string, len(t))
		for i, p := range t {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, "|")
	}
	return "any"
}

// runCode is the run_code tool: it runs a program, and resumes one that
// stopped at a call waiting for a person.
type runCode struct {
	tool.Tool
	c *CodeMode
}

// ValidateArgs implements [tool.Validator].
func (r *runCode) ValidateArgs(args json.RawMessage) error {
	return r.Tool.(tool.Validator).ValidateArgs(args)
}

// Resume implements [tool.Resumer]: the program runs again from the
// start, the calls it made before answered from the run's record of them
// without being made again, and the calls that waited answered as the
// person decided.
func (r *runCode) Resume(ctx context.Context, call *run.ToolExecution, requirements []*run.Requirement) (string, error) {
	code, _ := call.ToolArgs["code"].(string)
	resolved := map[string]*run.ToolExecution{}
	for _, req := range requirements {
		if req != nil && req.ToolExecution != nil {
			resolved[req.ToolExecution.ToolCallID] = req.ToolExecution
		}
	}
	return r.c.execute(ctx, call.ToolCallID, code, resolved)
}

// call runs run_code's program.
func (c *CodeMode) call(ctx context.Context, raw json.RawMessage) (string, error) {
	var args codeArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", fmt.Errorf("run_code: %w", err)
	}
	return c.execute(ctx, tool.CallID(ctx), args.Code, nil)
}

// errPaused stops a program at a call that waits for a person.
var errPaused = errors.New("the program waits for a person")

// program is one run of a program: its calls and what it printed.
type program struct {
	c        *CodeMode
	ctx      context.Context
	callID   string
	r        *runhost.Run
	runID    string // the run's id, for the calls' step keys
	prior    map[string]*run.ToolExecution
	resolved map[string]*run.ToolExecution
	calls    int
	out      limitedBuffer
	pause    *tool.ChildPause
}

// execute runs code for the call callID, with the calls resolved by a
// person when it resumes.
func (c *CodeMode) execute(ctx context.Context, callID, code string, resolved map[string]*run.ToolExecution) (string, error) {
	if strings.TrimSpace(code) == "" {
		return "", errors.New("run_code: code is empty: write a Starlark program")
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	p := &program{c: c, ctx: ctx, callID: callID, resolved: resolved, prior: map[string]*run.ToolExecution{},
		out: limitedBuffer{limit: c.cfg.MaxOutputBytes}}
	sessionKey := ""
	if r, ok := runhost.FromContext(ctx); ok {
		p.r = r
		r.Lock()
		out := r.Output()
		sessionKey = out.UserID + "\x00" + out.SessionID
		p.runID = out.RunID
		for _, t := range out.Tools {
			if strings.HasPrefix(t.ToolCallID, callID+".") && t.Result != nil {
				p.prior[t.ToolCallID] = t
			}
		}
		r.Unlock()
	}
	s := c.session(sessionKey)
	s.mu.Lock()
	defer s.mu.Unlock()

	file, err := (&syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}).Parse("run_code", code, 0)
	if err != nil {
		return "", fmt.Errorf("run_code: the program does not parse: %w", err)
	}
	lastValue := captureLastExpression(file)
	// The program runs on a copy: a program that fails or pauses leaves the
	// session's variables as they were, so its replay starts from them.
	globals := make(starlark.StringDict, len(s.globals)+len(c.specs)+2)
	for name, value := range s.globals {
		globals[name] = value
	}
	for fn := range c.functions {
		globals[fn] = starlark.NewBuiltin(fn, builtin)
	}
	globals["json"], globals["math"] = starjson.Module, starmath.Module
	thread := &starlark.Thread{Name: "run_code", Print: func(_ *starlark.Thread, msg string) { p.out.WriteString(msg + "\n") }}
	// The tools' functions find the program they serve on the thread, so a
	// function kept from an earlier program (f = add, or a def calling a
	// tool) calls the tool for this one.
	thread.SetLocal(programKey, p)
	thread.SetMaxExecutionSteps(c.cfg.MaxSteps)
	stop := context.AfterFunc(ctx, func() { thread.Cancel("the program ran out of time") })
	defer stop()
	err = starlark.ExecREPLChunk(file, thread, globals)
	if p.pause != nil {
		return "", p.pause
	}
	if err != nil {
		return "", p.failure(err)
	}
	if lastValue {
		if v, ok := globals[lastName]; ok && v != starlark.None {
			p.out.WriteString(display(v) + "\n")
		}
	}
	delete(globals, lastName)
	kept := make(starlark.StringDict, len(globals))
	for name, value := range globals {
		if _, isTool := c.functions[name]; isTool && isBuiltin(value) || name == "json" || name == "math" {
			continue
		}
		kept[name] = value
	}
	s.globals = kept
	text := strings.TrimRight(p.out.String(), "\n")
	if text == "" {
		text = "(the program printed nothing)"
	}
	return text, nil
}

// failure is the error of a program that failed: what went wrong, with
// what it printed before.
func (p *program) failure(err error) error {
	msg := err.Error()
	var evalErr *starlark.EvalError
	if errors.As(err, &evalErr) {
		msg = evalErr.Backtrace()
	}
	if printed := strings.TrimSpace(p.out.String()); printed != "" {
		return fmt.Errorf("run_code: %s\nprinted before the error:\n%s", msg, printed)
	}
	return fmt.Errorf("run_code: %s", msg)
}

// programKey is the thread-local key of the program a thread runs.
const programKey = "agnogo.program"

// isBuiltin reports whether v is a Go function.
func isBuiltin(v starlark.Value) bool {
	_, ok := v.(*starlark.Builtin)
	return ok
}

// lastName holds the value of a program's final expression.
const lastName = "_"

// captureLastExpression turns a final expression statement into an
// assignment to _, so its value can be returned, and reports whether it
// did. A final call of print is left alone.
func captureLastExpression(f *syntax.File) bool {
	if len(f.Stmts) == 0 {
		return false
	}
	expr, ok := f.Stmts[len(f.Stmts)-1].(*syntax.ExprStmt)
	if !ok {
		return false
	}
	if call, isCall := expr.X.(*syntax.CallExpr); isCall {
		if ident, named := call.Fn.(*syntax.Ident); named && ident.Name == "print" {
			return false
		}
	}
	start, _ := expr.X.Span()
	f.Stmts[len(f.Stmts)-1] = &syntax.AssignStmt{OpPos: start, Op: syntax.EQ, LHS: &syntax.Ident{NamePos: start, Name: lastName}, RHS: expr.X}
	return true
}

// session returns the variables of a session, creating them.
func (c *CodeMode) session(key string) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	s, ok := c.sessions[key]
	if !ok {
		s = &session{globals: starlark.StringDict{}}
		c.sessions[key] = s
		if len(c.sessions) > c.cfg.MaxSessions {
			oldest, oldestKey := ^uint64(0), ""
			for k, other := range c.sessions {
				if other != s && other.lastUsed < oldest {
					oldest, oldestKey = other.lastUsed, k
				}
			}
			delete(c.sessions, oldestKey)
		}
	}
	s.lastUsed = c.clock
	return s
}

// limitedBuffer keeps at most limit bytes and notes what it dropped.
type limitedBuffer struct {
	limit   int
	buf     bytes.Buffer
	dropped int
}

// WriteString keeps what fits.
func (b *limitedBuffer) WriteString(s string) {
	room := b.limit - b.buf.Len()
	if room >= len(s) {
		b.buf.WriteString(s)
		return
	}
	if room > 0 {
		b.buf.WriteString(s[:room])
	}
	b.dropped += len(s) - max(room, 0)
}

// String is the text kept, with a note of what was cut.
func (b *limitedBuffer) String() string {
	if b.dropped == 0 {
		return b.buf.String()
	}
	return fmt.Sprintf("%s\n[output cut: %d more bytes; print less]", b.buf.String(), b.dropped)
}
