package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/config"
	"github.com/agnogo/agnogo/internal/residency"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
)

// listeningMessage is the message of the line that says where the
// server listens; its addr attribute is the bound address.
const listeningMessage = agentos.ListeningMessage

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

Logs go to stderr, as text or (--log-format json) JSON lines, durations in
seconds. Start-up logs a warning per problem that will fail runs or weakens
the server, then one line with the URL, the docs URL, the agents, the
database, the auth mode and the version. A run that fails is logged with its
run id and error type. The routes are listed at /docs and described by
/openapi.json.

On SIGINT or SIGTERM the server stops accepting connections, cancels the
runs in flight and waits for them to save their final state (at most 15s),
then waits for the background runs executing here to finish (at most
queue.stop_timeout_seconds, 30s by default) and hands those still running
back to the queue, closes the database and exits with status 0.`,
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
	built, err := file.Build(ctx, config.BuildOptions{DB: flags.db, Logger: logger, RunLog: logger})
	var configErr *config.Error
	if errors.As(err, &configErr) || errors.Is(err, storage.ErrInvalid) {
		return &usageError{err: err}
	}
	if err != nil {
		return err // a database needing migration names agnogo migrate
	}
	// Closing drains the durable queue and closes the database: at the end
	// of a shutdown, or on the way out of a failed start.
	closeBuilt := sync.OnceValue(built.Close)
	defer func() { _ = closeBuilt() }()

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
	// resumes the runs this server left unfinished.
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

	logWarnings(logger, built)
	opts := serveOptions(file.Server)
	opts.StartupAttrs = []slog.Attr{
		slog.String("db", storageName(cmp.Or(flags.db, file.DB))),
		slog.String("media", built.MediaLocation),
	}
	if file.Server.ReleaseStartupMemory {
		releaseStartupMemory(logger)
	}
	// Serve logs the start-up line, serves until the signal, then stops
	// the runs in flight here.
	if err := agentOS.Serve(ctx, listener, opts); err != nil {
		return err
	}
	finishShutdown(logger, osConfig.Queue != nil, file.Queue.StopTimeoutSeconds, closeBuilt)
	return nil
}

// serveOptions are the config's server bounds as agentos takes them: a zero
// in the file turns a bound off, which agentos spells negative.
func serveOptions(limits config.Server) agentos.ServeOptions {
	off := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	return agentos.ServeOptions{
		BodyTimeout:             time.Duration(off(limits.BodyTimeoutSeconds)) * time.Second,
		UploadMinBytesPerSecond: int64(off(limits.UploadMinBytesPerSecond)),
		MaxConnections:          off(limits.MaxConnections),
		IdleTimeout:             time.Duration(limits.IdleTimeoutSeconds) * time.Second,
	}
}

// finishShutdown ends a shutdown once the HTTP server has stopped: it
// closes what the config built — the durable queue first, which waits up
// to queue.stop_timeout_seconds for the background runs executing here and
// hands those still running back to the queue — and says so.
func finishShutdown(logger *slog.Logger, queue bool, stopTimeoutSeconds int, closeBuilt func() error) {
	if !queue {
		if err := closeBuilt(); err != nil {
			logger.Warn("closing the database failed", slog.String("error", err.Error()))
		}
		logger.Info("stopped")
		return
	}
	logger.Info("waiting for the background runs executing here to finish; those still running then are handed back to the queue",
		slog.Int("timeout_s", stopTimeoutSeconds))
	start := time.Now()
	if err := closeBuilt(); err != nil {
		logger.Warn("closing the queue and the database failed", slog.String("error", err.Error()))
	}
	logger.Info("stopped", slog.Float64("background_wait_s", seconds(time.Since(start))))
}

// logWarnings logs one warning per problem that will fail runs.
func logWarnings(logger *slog.Logger, built *config.OS) {
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

// newLogger returns the server's logger on w. Durations are written in
// seconds, under their key with _s added (slog writes them as nanoseconds
// in JSON), and the durable queue's engine does not announce its start.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: durationInSeconds}
	switch format {
	case "text", "":
		return slog.New(quietEngine{Handler: slog.NewTextHandler(w, opts)}), nil
	case "json":
		return slog.New(quietEngine{Handler: slog.NewJSONHandler(w, opts)}), nil
	}
	return nil, usagef("--log-format %q: want text or json", format)
}

// durationInSeconds writes a duration attribute as seconds, its key ending
// in _s, as the access log's duration_s.
func durationInSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	return slog.Float64(a.Key+"_s", seconds(a.Value.Duration()))
}

// seconds is d in seconds, rounded to the millisecond.
func seconds(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

// quietEngine leaves out the routine start-up lines of the durable queue's
// engine (DBOS, whose logger carries component=durable), so that a start
// logs one line of its own; the engine's other lines — the runs it
// recovered, its warnings and errors — pass.
type quietEngine struct {
	slog.Handler
	engine bool // the records come from the engine's logger
}

// engineStartup are the messages of the engine's routine start-up lines.
var engineStartup = map[string]bool{
	"Initializing DBOS context":            true,
	"Connecting to system database":        true,
	"Connecting to SQLite system database": true,
	"Registered database-backed queue":     true,
	"DBOS launched":                        true,
}

// Handle implements slog.Handler.
func (h quietEngine) Handle(ctx context.Context, r slog.Record) error {
	if h.engine && r.Level < slog.LevelWarn && engineStartup[r.Message] {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h quietEngine) WithAttrs(attrs []slog.Attr) slog.Handler {
	engine := h.engine
	for _, a := range attrs {
		engine = engine || (a.Key == "component" && a.Value.String() == "durable")
	}
	return quietEngine{Handler: h.Handler.WithAttrs(attrs), engine: engine}
}

// WithGroup implements slog.Handler.
func (h quietEngine) WithGroup(name string) slog.Handler {
	return quietEngine{Handler: h.Handler.WithGroup(name), engine: h.engine}
}

// releaseStartupMemory releases the pages of the executable the process
// holds resident (server.release_startup_memory): once the server is
// built, most of them hold code and data only start-up used — the package
// initialisers of every library linked in. What serving uses is mapped
// back in from the page cache as it runs.
func releaseStartupMemory(logger *slog.Logger) {
	released, err := residency.Release()
	if err != nil {
		logger.Warn("releasing start-up memory failed", slog.String("error", err.Error()))
		return
	}
	logger.Debug("released start-up memory", slog.Int("mappings", released.Mappings), slog.Int64("bytes", released.Bytes),
		slog.Int64("file_resident_before", released.ResidentBefore), slog.Int64("file_resident_after", released.ResidentAfter))
}
