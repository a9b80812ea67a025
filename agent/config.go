package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/urlpolicy"
)

// Config configures an [Agent]. Only Model is required.
type Config struct {
	// ID identifies the agent (agent_id on runs and sessions). Defaults to
	// a name derived from Name, or "agent".
	ID string
	// Name is the display name. Defaults to ID.
	Name string
	// Model answers. Required.
	Model model.Model
	// Instructions become the system message. Defaults to none.
	Instructions string
	// Tools the model may call. Names must be unique.
	Tools []tool.Tool
	// Store keeps sessions and runs. Defaults to nil: nothing is persisted,
	// there is no history, and Continue needs the paused run passed in.
	Store storage.Store

	// SessionState is the initial state of a new session, under
	// session_data["session_state"]; a run's Input.SessionState is merged
	// into it. Defaults to none.
	SessionState map[string]any

	// AddHistoryToContext sends earlier runs of the session to the model.
	// Defaults to false.
	AddHistoryToContext bool
	// NumHistoryRuns is how many earlier runs make the history. Defaults to 3.
	NumHistoryRuns int

	// OutputSchema asks for a structured answer matching a JSON Schema; see
	// [SchemaFor] and [JSONSchema]. Defaults to none (a text answer).
	OutputSchema *OutputSchema

	// Retries is how many more attempts a run gets after a retryable failure
	// (rate limit, server error, timeout, connection error). Defaults to 0.
	Retries int
	// DelayBetweenRetries is the wait before a retry. Defaults to 1s.
	DelayBetweenRetries time.Duration
	// ExponentialBackoff doubles the delay with each attempt. Defaults to false.
	ExponentialBackoff bool

	// ToolCallLimit caps the tool calls of one run; 0 means no cap.
	ToolCallLimit int
	// StoreEvents keeps the run's events on the stored run. Defaults to false.
	StoreEvents bool

	// OffloadToolResults stores tool results longer than OffloadThreshold
	// characters in the Store (agno_tool_results) and shows the model an
	// envelope with a preview instead; the agent gets read_result and
	// search_result tools to page through them. Needs a Store. Defaults to
	// false.
	OffloadToolResults bool
	// OffloadThreshold is the size, in characters, above which a result is
	// offloaded. Defaults to 16,000.
	OffloadThreshold int

	// MediaURLPolicy, when set, checks every media URL of a run's input
	// (images, audio, video, files) before the run starts: a refused URL
	// refuses the run with an error wrapping [run.ErrInvalidInput], before
	// any model call. A model provider downloads those URLs — a
	// self-hosted one from inside the deployment's network — so
	// urlpolicy.Policy{BlockPrivate: true} keeps a client from pointing it
	// at internal addresses. Default nil: no check.
	MediaURLPolicy *urlpolicy.Policy

	// Media keeps the bytes of the run's media (package media): the inline
	// media of a run's input are put in it before the run is first saved,
	// so the run row and its messages hold references (media_id) instead of
	// base64, and each reference is read back just before the model call
	// that needs it — for the run's input, a continued run, or a history
	// message of an earlier run alike. Give AgentOS (agentos.Config.Media)
	// the same store, so uploads are streamed into it. A medium over the
	// store's size limit refuses the run with an error wrapping
	// [run.ErrInvalidInput]. Defaults to nil: media stay inline, and a
	// stored medium of the run fails it (one of a history message is left
	// out).
	Media media.Store
	// MaxModelMediaBytes bounds the stored media read back into a model
	// request, each: the bytes of a larger one are never read (a provider
	// takes none that large inline, and reading it would cost its size in
	// memory). Such a medium goes by its public URL when the store serves
	// one; otherwise it is left out of the request and the message tells
	// the model, in a line of text, that the file is attached but too large
	// to send. Zero means [DefaultMaxModelMediaBytes]; a negative value
	// removes the bound.
	MaxModelMediaBytes int64

	// UpdateMemoryOnRun asks the memory model, after each completed run of a
	// user, what it learned about the user, and stores new memories in the
	// Store (agno_memories). Needs a Store and a user id. Defaults to false.
	UpdateMemoryOnRun bool
	// AddMemoriesToContext tells the model the user's memories in the
	// system message. Defaults to false.
	AddMemoriesToContext bool
	// MemoryModel extracts memories. Defaults to Model.
	MemoryModel model.Model
	// EnableAgenticMemory gives the model the update_user_memory tool, with
	// which it adds, updates, deletes, lists or clears the memories of the
	// run's user itself, in the Store (agno_memories), as Agno's agentic
	// memory does; see [AgenticMemoryToolName]. Needs a Store; a run
	// without a user id gets an error from the tool. Defaults to false.
	EnableAgenticMemory bool

	// Prices give a cost to each model call from its tokens (metrics.cost),
	// looked up by the model's id (a dated snapshot such as
	// gpt-4o-2024-08-06 falls back to gpt-4o). Defaults to nil: the
	// built-in table, [DefaultPrices]. A non-nil table replaces it; an
	// empty one turns costs off.
	Prices PriceTable

	// Iterations, when set, runs the model loop in iterations (a team's
	// tasks mode, package team): when the model answers without a tool
	// call, Iterations decides whether another iteration starts, with a
	// user message of its own. Defaults to nil: the answer ends the run.
	Iterations Iterations

	// ApprovalExpiry is how long the approval a run of the agent records,
	// when it pauses on a tool that requires approval
	// ([tool.Spec.RequiresApproval]) and Store keeps approvals, stays
	// pending before it expires; an expired approval rejects the call.
	// Defaults to 0: approvals never expire.
	ApprovalExpiry time.Duration

	// SessionCacheSize is how many sessions the agent keeps in memory with
	// the runs that make their history, when Store is set: a turn that
	// continues a session the agent ran here last reads one version
	// counter instead of the session and its history, and a write by any
	// other process (another replica, a deleted run) is seen by that
	// counter. Defaults to runhost.DefaultSessionCacheSize (1024);
	// negative keeps none. Turn it off when a program that does not keep
	// agnogo's counter (Agno itself) writes the same sessions.
	SessionCacheSize int

	// Kind is what the agent's runs are: run.KindAgent, the default, or
	// run.KindTeam for the leader of a team (package team builds it): its
	// runs, sessions and events are then the team's — team_id and
	// team_name instead of agent_id, session_type team, Team* event names.
	Kind run.Kind

	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// NewID generates run, session and message ids. Defaults to random UUIDs.
	NewID func() string
	// Sleep waits between retries. Defaults to a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives the agent's logs. Defaults to slog.Default().
	Logger *slog.Logger
}

const defaultNumHistoryRuns = 3

func (c *Config) applyDefaults() {
	if c.ID == "" {
		c.ID = "agent"
		if c.Name != "" {
			c.ID = slug(c.Name)
		}
	}
	if c.Name == "" {
		c.Name = c.ID
	}
	if c.MaxModelMediaBytes == 0 {
		c.MaxModelMediaBytes = DefaultMaxModelMediaBytes
	}
	if c.OffloadThreshold == 0 {
		c.OffloadThreshold = DefaultOffloadThreshold
	}
	if c.NumHistoryRuns == 0 {
		c.NumHistoryRuns = defaultNumHistoryRuns
	}
	if c.DelayBetweenRetries == 0 {
		c.DelayBetweenRetries = time.Second
	}
	if c.Kind == "" {
		c.Kind = run.KindAgent
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewID == nil {
		c.NewID = run.NewUUID
	}
	if c.Sleep == nil {
		c.Sleep = run.Sleep
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Model == nil {
		errs = append(errs, errors.New("Model is required"))
	}
	if c.ApprovalExpiry < 0 {
		errs = append(errs, errors.New("ApprovalExpiry must not be negative"))
	}
	if c.NumHistoryRuns < 0 {
		errs = append(errs, fmt.Errorf("NumHistoryRuns %d must not be negative", c.NumHistoryRuns))
	}
	if c.Retries < 0 {
		errs = append(errs, fmt.Errorf("Retries %d must not be negative", c.Retries))
	}
	if c.DelayBetweenRetries < 0 {
		errs = append(errs, fmt.Errorf("DelayBetweenRetries %v must not be negative", c.DelayBetweenRetries))
	}
	if c.OffloadToolResults && c.Store == nil {
		errs = append(errs, errors.New("OffloadToolResults needs a Store to keep the results in"))
	}
	if c.EnableAgenticMemory && c.Store == nil {
		errs = append(errs, errors.New("EnableAgenticMemory needs a Store to keep the memories in"))
	}
	if c.ToolCallLimit < 0 {
		errs = append(errs, fmt.Errorf("ToolCallLimit %d must not be negative", c.ToolCallLimit))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("agent %s: %w", c.ID, err)
	}
	return nil
}
