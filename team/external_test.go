package team_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/internal/testcli"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/team"
)

// TestTeamWithAClaudeCodeMember: a coordinate team delegates to a Claude
// Code agent on the real claude CLI (against the fake Messages API) that
// runs a Bash command; the member run is a child run in a session of its
// own beside the team's, and the leader reads its answer.
func TestTeamWithAClaudeCodeMember(t *testing.T) {
	bin := testcli.ClaudeBin(t)
	api := fakeanthropic.New(t)
	api.Directed()
	store := openStore(t)
	cwd := t.TempDir()
	driver, err := claude.NewDriver(claude.Options{Bin: bin, Cwd: cwd, PermissionMode: "bypassPermissions", ProjectKey: "coder",
		Env: testcli.ClaudeVars(api.URL, t.TempDir()), Transcripts: store})
	require.NoError(t, err)
	coder, err := external.New(external.Config{ID: "coder", Name: "Coder", Store: store, Cwd: cwd, Driver: driver})
	require.NoError(t, err)
	leader := scripted.New([]scripted.Reply{delegate("coder", "[[bash:echo team-member-ran]]"), summarise})
	tm, err := team.New(team.Config{ID: "dev", Model: leader, Members: []run.Runner{coder}, Store: store})
	require.NoError(t, err)

	events := collect(t, tm.Stream(t.Context(), &run.Input{InputContent: "run it", UserID: "ada", SessionID: "dev-session", PersistOnStart: true}))
	last := events[len(events)-1]
	require.Equal(t, run.EventTeamRunCompleted, run.NameOf(last))
	require.Contains(t, last.(*run.RunCompleted).Content, "team-member-ran", "the leader read the member's answer")

	memberRun := memberRunsFrom(events)["coder"]
	require.NotEmpty(t, memberRun)
	rec, err := store.GetRun(t.Context(), memberRun, "ada")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, rec.Run.Status)
	// The fake API answers "fake-final: <tool results>" only once the CLI
	// really ran the command and sent back its output.
	require.Contains(t, rec.Run.ContentString(), "fake-final:")
	require.Contains(t, rec.Run.ContentString(), "team-member-ran")
	require.Equal(t, last.Base().RunID, rec.Run.ParentRunID)
	require.Equal(t, "dev-session~coder", rec.SessionID, "a CLI-bound member has a session of its own")
	teamSession, err := store.GetSession(t.Context(), "dev-session", storage.GetSessionOptions{UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, storage.SessionTypeTeam, teamSession.SessionType)
}
