package main

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
)

// serveFlags are the flags of `agnogo serve`.
type serveFlags struct {
	config string
	addr   string
	db     string
}

func (c *cli) serveCommand() *cobra.Command {
	var flags serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the AgentOS (this build only prepares its database)",
		Long: `Serve opens the database (creating a new one in the current schema) and would
serve the AgentOS HTTP API on --addr. The HTTP server is not part of this build
yet: serve checks the database, says so and exits with status 1.

A database with an older schema is refused with the agnogo migrate command
that moves it forward.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.runServe(cmd, flags)
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.config, "config", "", "config file (YAML)")
	f.StringVar(&flags.addr, "addr", "127.0.0.1:7777", "address to listen on, HOST:PORT")
	f.StringVar(&flags.db, "db", defaultDB, "database URL: sqlite://PATH or postgres://user:pass@host:5432/db")
	return cmd
}

func (c *cli) runServe(cmd *cobra.Command, flags serveFlags) error {
	if _, _, err := net.SplitHostPort(flags.addr); err != nil {
		return usagef("--addr %q: want HOST:PORT, such as 127.0.0.1:7777", flags.addr)
	}
	target, err := dburl.Parse(flags.db)
	if err != nil {
		return usagef("--db: %v", err)
	}
	if flags.config != "" {
		if _, err := os.Stat(flags.config); err != nil {
			return fmt.Errorf("config file: %w", err)
		}
	}
	store, err := dburl.Open(cmd.Context(), flags.db, dburl.Options{})
	if errors.Is(err, storage.ErrInvalid) {
		return &usageError{err: err}
	}
	if err != nil {
		return err
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("close %s: %w", target, err)
	}
	return fmt.Errorf("database ready at %s; the HTTP server is not available in this build yet", target)
}
