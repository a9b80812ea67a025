package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	agnorun "github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
)

// `agnogo sessions` reads and deletes the stored conversations of a
// database directly, without a server, as GET and DELETE /sessions do over
// HTTP. Without --user it sees every user's sessions: it is an operator's
// tool, with the database's own access.

// Page sizes of `agnogo sessions list`.
const (
	defaultSessionsPageSize = 20
	maxSessionsPageSize     = 1000
)

// snippetLength caps the input and answer shown in a table cell.
const snippetLength = 48

// sessionsFlags are the flags every `agnogo sessions` command takes.
type sessionsFlags struct {
	config string
	db     string
	user   string
	json   bool
}

func (c *cli) sessionsCommand() *cobra.Command {
	var flags sessionsFlags
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List, show and delete the stored sessions (conversations)",
		Long: `Sessions lists, shows and deletes the sessions of a database — each one a
conversation with an agent and its runs — as GET /sessions,
GET /sessions/{id} and DELETE /sessions/{id} do over HTTP.

The database is --db, else the config's db (--config, else ./agnogo.yaml when
it exists, else sqlite://./agnogo.db); a SQLite file that does not exist is an
error rather than created. --user scopes every command to one user's
sessions; without it, every user's sessions are seen.`,
		Example: `  agnogo sessions list --user ana
  agnogo sessions show 0198c0de-7a1b-7c3e-9f10-5a2b3c4d5e6f --json
  agnogo sessions delete 0198c0de-7a1b-7c3e-9f10-5a2b3c4d5e6f --yes`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("name a command: list, show or delete")
		},
	}
	f := cmd.PersistentFlags()
	f.StringVar(&flags.config, "config", "", "config file (YAML); defaults to ./agnogo.yaml when it exists, else the default config")
	f.StringVar(&flags.db, "db", "", "database URL, overriding the config's db (default "+defaultDB+")")
	f.StringVar(&flags.user, "user", "", "only this user's sessions (default: every user's)")
	f.BoolVar(&flags.json, "json", false, "print JSON instead of text")
	cmd.AddCommand(c.sessionsListCommand(&flags), c.sessionsShowCommand(&flags), c.sessionsDeleteCommand(&flags))
	return cmd
}

func (c *cli) sessionsListCommand(flags *sessionsFlags) *cobra.Command {
	var (
		agentID string
		limit   int
		page    int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recently updated first",
		Long: `List prints the sessions, most recently updated first: id, name (the name
given to the session, else the first message sent in it), agent, user, number
of runs and when it was last updated.

--json prints one page as {"data": [...], "page", "limit", "total_count"},
each item with session_id, session_name, session_type, agent_id (or team_id,
workflow_id), user_id, runs, created_at and updated_at (epoch seconds); ids,
absent names and users are left out when empty.`,
		Example: `  agnogo sessions list
  agnogo sessions list --agent coder --user ana --limit 50
  agnogo sessions list --json | jq -r '.data[].session_id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > maxSessionsPageSize {
				return usagef("--limit %d: want 1 to %d", limit, maxSessionsPageSize)
			}
			if page < 1 {
				return usagef("--page %d: want 1 or more", page)
			}
			return c.withSessions(cmd, *flags, func(ctx context.Context, store dburl.Store) error {
				sessions, total, err := store.ListSessions(ctx, storage.SessionQuery{
					UserID:      flags.user,
					ComponentID: agentID,
					SortBy:      "updated_at",
					SortOrder:   storage.SortDesc,
					Page:        storage.Page{Limit: limit, Page: page},
				})
				if err != nil {
					return fmt.Errorf("list sessions: %w", err)
				}
				items := make([]sessionItem, 0, len(sessions))
				for _, s := range sessions {
					item, err := summarizeSession(ctx, store, s, flags.user)
					if err != nil {
						return err
					}
					items = append(items, item)
				}
				out := cmd.OutOrStdout()
				if flags.json {
					return writeJSON(out, sessionList{Data: items, Page: page, Limit: limit, TotalCount: total})
				}
				return printSessions(out, items, total, page, limit)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&agentID, "agent", "", "only the sessions of this agent (or team or workflow) id")
	f.IntVar(&limit, "limit", defaultSessionsPageSize, fmt.Sprintf("sessions to show, 1 to %d", maxSessionsPageSize))
	f.IntVar(&page, "page", 1, "page of --limit sessions to show, from 1")
	return cmd
}

// sessionList is what `agnogo sessions list --json` prints: one page, in
// the shape of `agnogo queue list --json`.
type sessionList struct {
	Data       []sessionItem `json:"data"`
	Page       int           `json:"page"`
	Limit      int           `json:"limit"`
	TotalCount int           `json:"total_count"`
}

// sessionItem is one session as the sessions commands print it.
type sessionItem struct {
	SessionID string `json:"session_id"`
	// SessionName is the session's name, else the first message sent in it.
	SessionName string              `json:"session_name,omitempty"`
	SessionType storage.SessionType `json:"session_type"`
	AgentID     string              `json:"agent_id,omitempty"`
	TeamID      string              `json:"team_id,omitempty"`
	WorkflowID  string              `json:"workflow_id,omitempty"`
	UserID      string              `json:"user_id,omitempty"`
	// Runs counts the session's runs.
	Runs int `json:"runs"`
	// CreatedAt and UpdatedAt are epoch seconds.
	CreatedAt int64 `json:"created_at"`
	UpdatedAt int64 `json:"updated_at"`
}

// summarizeSession describes s, counting its runs (those userID may see).
func summarizeSession(ctx context.Context, store dburl.Store, s *storage.Session, userID string) (sessionItem, error) {
	first, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: s.SessionID, UserID: userID, Page: storage.Page{Limit: 1}})
	if err != nil {
		return sessionItem{}, fmt.Errorf("count the runs of session %s: %w", s.SessionID, err)
	}
	name := s.Name()
	if name == "" && len(first) > 0 {
		name = firstUserText(first[0].Run)
	}
	return sessionItem{
		SessionID:   s.SessionID,
		SessionName: name,
		SessionType: cmp.Or(s.SessionType, storage.SessionTypeAgent),
		AgentID:     s.AgentID,
		TeamID:      s.TeamID,
		WorkflowID:  s.WorkflowID,
		UserID:      s.UserID,
		Runs:        total,
		CreatedAt:   s.CreatedAt,
		UpdatedAt:   cmp.Or(s.UpdatedAt, s.CreatedAt),
	}, nil
}

// firstUserText is what a run's user sent: its first own user message, else
// its input — the name the AgentOS API gives an unnamed session.
func firstUserText(out *agnorun.Output) string {
	if out == nil {
		return ""
	}
	for _, m := range out.Messages {
		if m != nil && m.Role == agnorun.RoleUser && !m.FromHistory {
			if text := m.ContentString(); text != "" {
				return text
			}
		}
	}
	return out.Input.ContentString()
}

// printSessions prints sessions as an aligned table, then where the page is.
func printSessions(out io.Writer, items []sessionItem, total, page, limit int) error {
	if total == 0 {
		_, err := fmt.Fprintln(out, "no sessions")
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tAGENT\tUSER\tRUNS\tUPDATED")
	for _, s := range items {
		component := cmp.Or(s.AgentID, s.TeamID, s.WorkflowID, "-")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.SessionID, cmp.Or(oneLine(s.SessionName, 40), "-"), component,
			cmp.Or(s.UserID, "-"), s.Runs, epochText(s.UpdatedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	first := (page-1)*limit + 1
	var err error
	switch {
	case len(items) == 0:
		_, err = fmt.Fprintf(out, "page %d is past the end: %d %s\n", page, total, plural(total, "session", "sessions"))
	case len(items) < total:
		_, err = fmt.Fprintf(out, "%d–%d of %d sessions (--page, --limit for more)\n", first, first+len(items)-1, total)
	default:
		_, err = fmt.Fprintf(out, "%d %s\n", total, plural(total, "session", "sessions"))
	}
	return err
}

func (c *cli) sessionsShowCommand(flags *sessionsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show SESSION_ID",
		Short: "Show a session and its runs",
		Long: `Show prints a session and its runs in order: each run's id, status, when it
was created, what was sent and the start of the answer (or, for a paused run,
what it waits for).

--json prints the session as sessions list does, plus session_state, metadata
and summary when set, and "runs": each with run_id, agent_id, parent_run_id,
status, input (text), content (the whole answer), created_at and, for a
paused run, the requirements it waits for. The whole stored run (messages,
tools, metrics) is GET /sessions/{id}/runs of the AgentOS API.`,
		Example: `  agnogo sessions show 0198c0de-7a1b-7c3e-9f10-5a2b3c4d5e6f
  agnogo sessions show 0198c0de-7a1b-7c3e-9f10-5a2b3c4d5e6f --user ana --json`,
		Args: exactlyOneID("show", "SESSION_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withSessions(cmd, *flags, func(ctx context.Context, store dburl.Store) error {
				session, err := getSession(ctx, store, args[0], flags.user, true)
				if err != nil {
					return err
				}
				item, err := summarizeSession(ctx, store, session, flags.user)
				if err != nil {
					return err
				}
				detail := sessionDetail{sessionItem: item, Runs: make([]runItem, 0, len(session.Runs))}
				detail.SessionState, _ = session.SessionData[storage.SessionStateKey].(map[string]any)
				detail.Metadata, detail.Summary = session.Metadata, session.Summary
				for _, r := range session.Runs {
					detail.Runs = append(detail.Runs, summarizeRun(r))
				}
				out := cmd.OutOrStdout()
				if flags.json {
					return writeJSON(out, detail)
				}
				return printSession(out, detail)
			})
		},
	}
}

// sessionDetail is what `agnogo sessions show --json` prints.
type sessionDetail struct {
	sessionItem
	SessionState map[string]any `json:"session_state,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Summary      map[string]any `json:"summary,omitempty"`
	Runs         []runItem      `json:"runs"`
}

// runItem is one run of a session as `agnogo sessions show` prints it.
type runItem struct {
	RunID       string         `json:"run_id"`
	AgentID     string         `json:"agent_id,omitempty"`
	ParentRunID string         `json:"parent_run_id,omitempty"`
	Status      agnorun.Status `json:"status"`
	Input       string         `json:"input"`
	// Content is the answer: text, or structured output as JSON.
	Content any `json:"content,omitempty"`
	// CreatedAt is epoch seconds.
	CreatedAt int64 `json:"created_at"`
	// Requirements are what a paused run still waits for.
	Requirements []*agnorun.Requirement `json:"requirements,omitempty"`
}

func summarizeRun(out *agnorun.Output) runItem {
	item := runItem{RunID: out.RunID, AgentID: out.AgentID, ParentRunID: out.ParentRunID, Status: out.Status,
		Input: out.Input.ContentString(), Content: out.Content, CreatedAt: out.CreatedAt}
	if out.Status == agnorun.StatusPaused {
		item.Requirements = out.ActiveRequirements()
	}
	return item
}

// printSession prints a session's fields, then its runs as a table.
func printSession(out io.Writer, s sessionDetail) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "session\t%s\n", s.SessionID)
	if s.SessionName != "" {
		fmt.Fprintf(tw, "name\t%s\n", oneLine(s.SessionName, 80))
	}
	switch {
	case s.TeamID != "":
		fmt.Fprintf(tw, "team\t%s\n", s.TeamID)
	case s.WorkflowID != "":
		fmt.Fprintf(tw, "workflow\t%s\n", s.WorkflowID)
	default:
		fmt.Fprintf(tw, "agent\t%s\n", cmp.Or(s.AgentID, "-"))
	}
	fmt.Fprintf(tw, "user\t%s\n", cmp.Or(s.UserID, "-"))
	fmt.Fprintf(tw, "created\t%s\n", epochText(s.CreatedAt))
	fmt.Fprintf(tw, "updated\t%s\n", epochText(s.UpdatedAt))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.Runs) == 0 {
		_, err := fmt.Fprintln(out, "\nno runs")
		return err
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tCREATED\tINPUT\tANSWER")
	for _, r := range s.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.RunID, r.Status, epochText(r.CreatedAt),
			cmp.Or(oneLine(r.Input, snippetLength), "-"), cmp.Or(oneLine(runAnswer(r), snippetLength), "-"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%d %s\n", len(s.Runs), plural(len(s.Runs), "run", "runs"))
	return err
}

// runAnswer is what the answer column shows: the answer, or what a paused
// run waits for.
func runAnswer(r runItem) string {
	if len(r.Requirements) == 0 {
		return contentText(r.Content)
	}
	waits := make([]string, 0, len(r.Requirements))
	for _, req := range r.Requirements {
		what, name := requirementAction(req), "?"
		if req.ToolExecution != nil {
			name = req.ToolExecution.ToolName
		}
		waits = append(waits, what+" "+name)
	}
	return "waiting to " + strings.Join(waits, ", ")
}

func (c *cli) sessionsDeleteCommand(flags *sessionsFlags) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete SESSION_ID",
		Short: "Delete a session with its runs",
		Long: `Delete removes a session with all its runs and transcripts; it cannot be
undone. It asks first when stdin is a terminal; elsewhere (a script, a pipe)
it needs --yes. --json prints the deleted session as sessions list does.`,
		Example: `  agnogo sessions delete 0198c0de-7a1b-7c3e-9f10-5a2b3c4d5e6f
  agnogo sessions delete 0198c0de-7a1b-7c3e-9f10-5a2b3c4d5e6f --user ana --yes`,
		Args: exactlyOneID("delete", "SESSION_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			stdin := cmd.InOrStdin()
			if !yes && !isTerminal(stdin) {
				return usagef("delete asks for confirmation, and stdin is not a terminal: add --yes to delete session %s", args[0])
			}
			return c.withSessions(cmd, *flags, func(ctx context.Context, store dburl.Store) error {
				session, err := getSession(ctx, store, args[0], flags.user, false)
				if err != nil {
					return err
				}
				item, err := summarizeSession(ctx, store, session, flags.user)
				if err != nil {
					return err
				}
				if !yes && !confirm(stdin, c.stderr, deletePrompt(item)) {
					return fmt.Errorf("session %s not deleted", item.SessionID)
				}
				if err := store.DeleteSession(ctx, item.SessionID, flags.user); err != nil {
					if errors.Is(err, storage.ErrNotFound) {
						return sessionNotFound(item.SessionID, flags.user)
					}
					return fmt.Errorf("delete session %s: %w", item.SessionID, err)
				}
				out := cmd.OutOrStdout()
				if flags.json {
					return writeJSON(out, item)
				}
				_, err = fmt.Fprintf(out, "deleted session %s (%d %s)\n", item.SessionID, item.Runs, plural(item.Runs, "run", "runs"))
				return err
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking")
	return cmd
}

// deletePrompt is the question `agnogo sessions delete` asks.
func deletePrompt(s sessionItem) string {
	what := s.SessionID
	if s.SessionName != "" {
		what += fmt.Sprintf(" (%q)", oneLine(s.SessionName, 40))
	}
	return fmt.Sprintf("Delete session %s with its %d %s? [y/N] ", what, s.Runs, plural(s.Runs, "run", "runs"))
}

// confirm asks question on prompt and reports whether the answer read from
// in is yes; no answer (end of input) is no.
func confirm(in io.Reader, prompt io.Writer, question string) bool {
	fmt.Fprint(prompt, question)
	answer, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && answer == "" {
		fmt.Fprintln(prompt)
		return false
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}

// exactlyOneID checks that a command got its one id argument.
func exactlyOneID(command, name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("%s takes one %s, got %d argument(s)", command, name, len(args))
		}
		return nil
	}
}

// getSession reads one session, scoped to userID when set; a missing one
// is an error that says so.
func getSession(ctx context.Context, store dburl.Store, sessionID, userID string, withRuns bool) (*storage.Session, error) {
	session, err := store.GetSession(ctx, sessionID, storage.GetSessionOptions{UserID: userID, IncludeRuns: withRuns})
	if errors.Is(err, storage.ErrNotFound) {
		return nil, sessionNotFound(sessionID, userID)
	}
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", sessionID, err)
	}
	return session, nil
}

// sessionNotFound is the error of a session that is not stored (for the user).
func sessionNotFound(sessionID, userID string) error {
	if userID != "" {
		return fmt.Errorf("no session %s for user %s", sessionID, userID)
	}
	return fmt.Errorf("no session %s", sessionID)
}

// withSessions opens the database the flags name, without creating one,
// and calls use with it.
func (c *cli) withSessions(cmd *cobra.Command, flags sessionsFlags, use func(context.Context, dburl.Store) error) error {
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
	dbURL, err := existingDatabase(flags.db, file)
	if err != nil {
		return err
	}
	store, err := dburl.Open(ctx, dbURL, dburl.Options{})
	if err != nil {
		return err // a database needing migration names agnogo migrate
	}
	defer store.Close()
	return use(ctx, store)
}
