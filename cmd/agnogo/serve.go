package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/config"
	"github.com/agnogo/agnogo/internal/httpbound"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
)

// Server timeouts. The config's server key bounds the rest (see
// newHTTPServer): request bodies, idle connections, the connections open at
// once and SSE clients that stop reading. Responses as a whole are not
// bounded: a run's stream lasts as long as the run.
const (
	// readHeaderTimeout bounds how long a client may take to send its
	// request headers (slowloris).
	readHeaderTimeout = 10 * time.Second
	// shutdownTimeout bounds a graceful shutdown: cancelling the runs in
	// flight, waiting for them to save, and closing the connections.
	shutdownTimeout = 15 * time.Second
)

// listeningMessage is the log message of the line that says where the
// server listens; its addr attribute is the bound address.
const listeningMessage = "AgentOS listening"

// serveFlags are the flags of `agnogo serve`.
type serveFlags struct {
	config    string
	addr      string
	db        string
	logFormat string
}

func (c *cli) serveCommand() *cobra.Command {
	var flags serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the AgentOS HTTP API",
		Long: `Serve serves the AgentOS HTTP API (REST + Server-Sent Events, wire-compatible
with Agno's AgentOS) on --addr until interrupted.

The config is --config, else ./agnogo.yaml when it exists, else the default:
one "assistant" agent on the model named by AGNOGO_MODEL (openai:gpt-5-mini
unless set), credentials from OPENAI_API_KEY or ANTHROPIC_API_KEY, and the
database sqlite://./agnogo.db. Without credentials the server still starts,
logs which variable to set, and runs of the agent fail until it is set.
--db overrides the config's database; a new SQLite file is created, and a
database with an older schema is refused with the agnogo migrate command
that moves it forward. Uploaded files stream into the config's
media_storage (default: the directory media beside the SQLite database),
and runs keep references to them instead of their bytes.

Background runs go through the durable queue in the database, which several
servers may share. Each is named there by its executor id: queue.executor_id,
else AGNOGO_EXECUTOR_ID, else the host name, --addr and the database, so
servers on one host need different --addr. A server whose executor id a live
server uses exits with status 1 before it touches any run; one restarted with
its id resumes the runs it left unfinished.

Logs go to stderr, as text or (--log-format json) JSON lines. The routes are
listed at /docs and described by /openapi.json. On SIGINT or SIGTERM the
server stops accepting connections, cancels the runs in flight, waits for
them to save their final state (at most 15s), closes the database and exits
with status 0.`,
		Example: `  agnogo serve
  agnogo serve --config agnogo.yaml --addr 0.0.0.0:7777
  curl -F message=hello -F stream=false http://127.0.0.1:7777/agents/assistant/runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.runServe(cmd, flags)
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.config, "config", "", "config file (YAML); defaults to ./agnogo.yaml when it exists, else the default assistant")
	f.StringVar(&flags.addr, "addr", "127.0.0.1:7777", "address to listen on, HOST:PORT (port 0 picks a free port)")
	f.StringVar(&flags.db, "db", "", "database URL, overriding the config's db (default "+defaultDB+")")
	f.StringVar(&flags.logFormat, "log-format", "text", "log format: text or json")
	return cmd
}

func (c *cli) runServe(cmd *cobra.Command, flags serveFlags) error {
	ctx := cmd.Context()
	if _, _, err := net.SplitHostPort(flags.addr); err != nil {
		return usagef("--addr %q: want HOST:PORT, such as 127.0.0.1:7777", flags.addr)
	}
	if flags.db != "" {
		if _, err := dburl.Parse(flags.db); err != nil {
			return usagef("--db: %v", err)
		}
	}
	logger, err := newLogger(c.stderr, flags.logFormat)
	if err != nil {
		return err
	}

	file, err := loadRunConfig(flags.config)
	if err != nil {
		return err
	}
	built, err := file.Build(ctx, config.BuildOptions{DB: flags.db, Logger: logger})
	var configErr *config.Error
	if errors.As(err, &configErr) || errors.Is(err, storage.ErrInvalid) {
		return &usageError{err: err}
	}
	if err != nil {
		return err // a database needing migration names agnogo migrate
	}
	defer built.Close()

	// The address is bound before the queue starts: a server that cannot
	// listen must not take over runs. Connections wait until it serves.
	listener, err := net.Listen("tcp", flags.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", flags.addr, err)
	}
	// The listen address, as given, makes the default executor id unique
	// per server on this host and stable across its restarts.
	serverOpts := config.ServerOptions{Version: serverVersion(), Logger: logger, ListenAddr: flags.addr}
	osConfig := built.Server(serverOpts)
	// Background runs go through the durable queue (queue.durable); it
	// resumes the runs this server left unfinished. built.Close drains it.
	osConfig.Queue, osConfig.Events, err = built.StartQueue(ctx, serverOpts)
	if err != nil {
		_ = listener.Close()
		return fmt.Errorf("start the background queue: %w", err)
	}
	agentOS, err := agentos.New(osConfig)
	if err != nil {
		_ = listener.Close()
		// Only the auth settings can be refused here: the config's fault.
		return &usageError{err: fmt.Errorf("%s: %w", file.Source, err)}
	}

	server, err := newHTTPServer(ctx, agentOS, file.Server, logger)
	if err != nil {
		_ = listener.Close()
		return err
	}
	// Past max_connections, new connections wait in the kernel's accept
	// queue until one closes.
	listener = httpbound.LimitListener(listener, file.Server.MaxConnections)
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()

	logStartup(logger, listener.Addr().String(), built, osConfig, cmp.Or(flags.db, file.DB))

	select {
	case err := <-served:
		return fmt.Errorf("serve on %s: %w", listener.Addr(), err)
	case <-ctx.Done():
	}
	return shutdown(logger, server, agentOS, served)
}

// newHTTPServer is the server of handler, bounded as the config's server key
// says. Request bodies get their read deadline from httpbound rather than
// ReadTimeout, which cannot give an upload more time as its bytes arrive;
// there is no WriteTimeout, which would end a run's stream (agentos bounds
// each SSE write instead).
func newHTTPServer(ctx context.Context, handler http.Handler, limits config.Server, logger *slog.Logger) (*http.Server, error) {
	bounded, err := httpbound.Handler(handler, httpbound.Config{
		BodyTimeout:   time.Duration(limits.BodyTimeoutSeconds) * time.Second,
		UploadMinRate: int64(limits.UploadMinBytesPerSecond),
		Logger:        logger,
	})
	if err != nil {
		return nil, fmt.Errorf("bound request bodies: %w", err)
	}
	return &http.Server{
		Handler:           bounded,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       time.Duration(limits.IdleTimeoutSeconds) * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}, nil
}

// shutdown stops the server gracefully: it stops accepting connections,
// cancels the runs in flight and waits, at most shutdownTimeout, for them to
// save their final state and for their responses to end.
func shutdown(logger *slog.Logger, server *http.Server, agentOS *agentos.OS, served <-chan error) error {
	logger.Info("shutting down: cancelling runs in flight", slog.Duration("timeout", shutdownTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// http.Server.Shutdown closes the listener at once, then waits for the
	// handlers; the runs' handlers end once agentOS.Shutdown cancels them.
	httpDone := make(chan error, 1)
	go func() { httpDone <- server.Shutdown(ctx) }()
	runsErr := agentOS.Shutdown(ctx)
	httpErr := <-httpDone
	<-served // Serve returns ErrServerClosed once Shutdown began
	if runsErr != nil || httpErr != nil {
		_ = server.Close()
		return fmt.Errorf("shutdown did not finish within %s: %w", shutdownTimeout, errors.Join(runsErr, httpErr))
	}
	logger.Info("stopped")
	return nil
}

// logStartup logs where the server listens and what it serves, then one
// warning per problem that will fail runs.
func logStartup(logger *slog.Logger, addr string, built *config.OS, cfg agentos.Config, db string) {
	ids := make([]string, 0, len(cfg.Runners))
	for _, r := range cfg.Runners {
		ids = append(ids, r.ID())
	}
	authMode := "none"
	switch {
	case cfg.Auth.JWT != nil:
		authMode = "jwt"
	case cfg.Auth.SecurityKey != "":
		authMode = "security_key"
	}
	url := "http://" + addr
	logger.Info(listeningMessage,
		slog.String("addr", addr),
		slog.String("url", url),
		slog.String("docs", url+"/docs"),
		slog.String("name", built.Name),
		slog.String("agents", strings.Join(ids, ",")),
		slog.String("db", storageName(db)),
		slog.String("media", built.MediaLocation),
		slog.String("auth", authMode),
		slog.String("version", cfg.Version),
	)
	credentialWarnings := map[string]bool{}
	for _, m := range built.MissingCredentials {
		credentialWarnings[m.Variable] = true
		logger.Warn(fmt.Sprintf("no %s: runs of %s %s will fail until it is set", m.Variable,
			plural(len(m.Agents), "agent", "agents"), strings.Join(m.Agents, ", ")),
			slog.String("model", m.Model), slog.String("set", m.Variable))
	}
	for _, w := range built.Warnings {
		if isCredentialWarning(w, credentialWarnings) {
			continue // said above, with the agents it affects
		}
		logger.Warn(w)
	}
}

// isCredentialWarning reports a build warning about a missing API key
// already logged from MissingCredentials.
func isCredentialWarning(warning string, variables map[string]bool) bool {
	for v := range variables {
		if strings.Contains(warning, "has no API key: set "+v) {
			return true
		}
	}
	return false
}

// storageName is the database URL without its password, for the log.
func storageName(db string) string {
	target, err := dburl.Parse(db)
	if err != nil {
		return db
	}
	return fmt.Sprint(target)
}

// newLogger returns the server's logger on w.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format %q: want text or json", format)
}
