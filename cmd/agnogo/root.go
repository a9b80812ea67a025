package main

import (
	"io"

	"github.com/spf13/cobra"
)

// defaultDB is the database used when --db is not given.
const defaultDB = "sqlite://./agnogo.db"

// cli holds what the commands share.
type cli struct {
	stdout, stderr io.Writer
	// started records that a command's own code began: cobra accepted the
	// command line, so an error from here on is a failure, not misuse.
	started bool
}

func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "agnogo",
		Short: "agnogo runs and maintains an AgentOS",
		Long: `agnogo runs and maintains an AgentOS: agents, teams and workflows served over
HTTP, with sessions and runs kept in SQLite or PostgreSQL.

Databases are given as sqlite://PATH or postgres://user:pass@host:5432/db.`,
		PersistentPreRun: func(*cobra.Command, []string) {
			c.started = true
		},
		// run prints errors itself, as "agnogo: <message>", and only
		// points at --help for usage errors.
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
	}
	addVersionFlag(root)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.AddCommand(c.healthCommand(), c.migrateCommand(), c.queueCommand(), c.runCommand(), c.schedulesCommand(), c.serveCommand(), c.sessionsCommand(), c.versionCommand())
	return root
}
