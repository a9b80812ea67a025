package agentos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agnogo/agnogo/internal/httpbound"
)

// Defaults of [ServeOptions]: those of `agnogo serve` (its config's server
// key, and its --addr).
const (
	// DefaultAddr is where [OS.ListenAndServe] listens when addr is "".
	DefaultAddr = "127.0.0.1:7777"
	// DefaultBodyTimeout is [ServeOptions.BodyTimeout] when zero.
	DefaultBodyTimeout = 60 * time.Second
	// DefaultUploadMinBytesPerSecond is
	// [ServeOptions.UploadMinBytesPerSecond] when zero: 64 KiB/s.
	DefaultUploadMinBytesPerSecond = 64 << 10
	// DefaultMaxConnections is [ServeOptions.MaxConnections] when zero.
	DefaultMaxConnections = 10000
	// DefaultIdleTimeout is [ServeOptions.IdleTimeout] when zero.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultReadHeaderTimeout is [ServeOptions.ReadHeaderTimeout] when
	// zero.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultShutdownTimeout is [ServeOptions.ShutdownTimeout] when zero.
	DefaultShutdownTimeout = 15 * time.Second
)

// ListeningMessage is the message of the line [OS.Serve] logs once it
// serves. Its first attribute, addr, is the bound address (HOST:PORT), so a
// program that listens on port 0 can find the port in the log.
const ListeningMessage = "AgentOS listening"

// ServeOptions bound what [OS.Serve] gives each client, so slow or stalled
// clients cannot hold its handlers, goroutines and connections for ever,
// and how long its shutdown may take. The zero value is `agnogo serve`'s
// defaults. How long a Server-Sent Events client may stop reading is
// [Config.SSEWriteTimeout]. Responses as a whole are never bounded: a run's
// stream lasts as long as the run.
type ServeOptions struct {
	// BodyTimeout bounds how long a request body may take to arrive once
	// its handler starts; a slower body, or one shorter than its
	// Content-Length, is cut off (the request answers 400 and the
	// connection is closed). Zero means [DefaultBodyTimeout]; a negative
	// value removes the bound.
	BodyTimeout time.Duration
	// UploadMinBytesPerSecond gives a multipart/form-data body (an upload)
	// one more second per this many bytes it delivers, so an upload at
	// least this fast is never cut off. Zero means
	// [DefaultUploadMinBytesPerSecond]; a negative value gives uploads
	// BodyTimeout, like any body.
	UploadMinBytesPerSecond int64
	// MaxConnections caps the client connections open at once; past it,
	// new connections wait to be accepted until one closes. Zero means
	// [DefaultMaxConnections]; a negative value removes the cap.
	MaxConnections int
	// IdleTimeout closes a keep-alive connection left idle that long. Zero
	// means [DefaultIdleTimeout]; a negative value keeps idle connections
	// open.
	IdleTimeout time.Duration
	// ReadHeaderTimeout bounds how long a client may take to send its
	// request headers (slowloris). Zero or negative means
	// [DefaultReadHeaderTimeout].
	ReadHeaderTimeout time.Duration
	// ShutdownTimeout bounds the graceful shutdown once the context of
	// [OS.Serve] ends: cancelling the runs in flight, waiting for them to
	// save their final state, and ending the responses. Zero or negative
	// means [DefaultShutdownTimeout].
	ShutdownTimeout time.Duration
	// StartupAttrs are added to the line logged once the server serves
	// (see [ListeningMessage]), after its agents: what an operator should
	// see there that the OS does not know, such as its database. Defaults
	// to none.
	StartupAttrs []slog.Attr
}

// withDefaults resolves the zero values; a negative bound stays negative
// ("none").
func (s ServeOptions) withDefaults() ServeOptions {
	s.BodyTimeout = cmp.Or(s.BodyTimeout, DefaultBodyTimeout)
	s.UploadMinBytesPerSecond = cmp.Or(s.UploadMinBytesPerSecond, DefaultUploadMinBytesPerSecond)
	s.MaxConnections = cmp.Or(s.MaxConnections, DefaultMaxConnections)
	s.IdleTimeout = cmp.Or(s.IdleTimeout, DefaultIdleTimeout)
	if s.ReadHeaderTimeout <= 0 {
		s.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if s.ShutdownTimeout <= 0 {
		s.ShutdownTimeout = DefaultShutdownTimeout
	}
	return s
}

// ListenAndServe listens on addr (HOST:PORT; "" means [DefaultAddr], port
// 0 picks a free port) and serves the OS there as [OS.Serve] does, until
// ctx ends.
func (o *OS) ListenAndServe(ctx context.Context, addr string, opts ServeOptions) error {
	addr = cmp.Or(addr, DefaultAddr)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return o.Serve(ctx, ln, opts)
}

// Serve serves the OS on ln, bounded as opts say, until ctx ends, then
// shuts down gracefully and returns nil: it stops accepting connections,
// refuses new runs with 503, cancels the runs in flight here (each is saved
// CANCELLED and its stream ends with RunCancelled), and waits for them to
// be saved and for their responses to end, at most opts.ShutdownTimeout.
// It returns an error when that wait runs out, or when ln fails. Serve
// closes ln. An OS serves once: it is shut down when Serve returns.
//
// Runs on a durable queue ([Config.Queue]) are not the server's to stop:
// stop the queue after Serve returns (durable.Queue.Shutdown waits for the
// runs executing here, then hands the rest back to the queue).
//
// Serve logs, through [Config.Logger], a warning per setting that weakens
// the server (JWT scopes not enforced), then one line saying where it
// listens and what it serves ([ListeningMessage]), and how its shutdown
// goes. Durations are logged in seconds, in attributes ending in _s.
func (o *OS) Serve(ctx context.Context, ln net.Listener, opts ServeOptions) error {
	opts = opts.withDefaults()
	handler, err := httpbound.Handler(o, httpbound.Config{
		BodyTimeout:   max(opts.BodyTimeout, 0),
		UploadMinRate: max(opts.UploadMinBytesPerSecond, 0),
		Logger:        o.log,
	})
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("agentos: bound request bodies: %w", err)
	}
	// Request bodies get their read deadline from httpbound rather than
	// ReadTimeout, which cannot give an upload more time as its bytes
	// arrive; there is no WriteTimeout, which would end a run's stream
	// (each SSE write is bounded instead).
	server := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       max(opts.IdleTimeout, 0),
		ErrorLog:          slog.NewLogLogger(o.log.Handler(), slog.LevelWarn),
		// Requests keep ctx's values but not its end: a shutdown cancels
		// the runs itself, and lets them save.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	// Past MaxConnections, new connections wait in the kernel's accept
	// queue until one closes.
	ln = httpbound.LimitListener(ln, opts.MaxConnections)
	served := make(chan error, 1)
	go func() { served <- server.Serve(ln) }()
	o.logStartup(ctx, ln.Addr().String(), opts.StartupAttrs)

	select {
	case err := <-served:
		// No connection is accepted any more: stop the runs too.
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
		defer cancel()
		_ = o.Shutdown(stop)
		_ = server.Close()
		return fmt.Errorf("agentos: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	return o.shutdownServer(server, served, opts.ShutdownTimeout)
}

// logStartup logs the warnings about the OS's settings, then where it
// listens and what it serves: the last line of a start.
func (o *OS) logStartup(ctx context.Context, addr string, extra []slog.Attr) {
	if o.auth.scopesOff() {
		o.log.WarnContext(ctx, "JWT scopes are not enforced: any valid token may call every route but the admin-only ones; "+
			"set auth.jwt.authorization: true (JWTConfig.ValidateOnly: false) to check each route's scopes")
	}
	url := "http://" + browsable(addr)
	attrs := []slog.Attr{
		slog.String("addr", addr),
		slog.String("url", url),
		slog.String("docs", url+"/docs"),
		slog.String("name", o.cfg.Name),
		slog.String("agents", strings.Join(ids(o.runnersOf(agentComponent)), ",")),
	}
	if teams := o.runnersOf(teamComponent); len(teams) > 0 {
		attrs = append(attrs, slog.String("teams", strings.Join(ids(teams), ",")))
	}
	if workflows := o.runnersOf(workflowComponent); len(workflows) > 0 {
		attrs = append(attrs, slog.String("workflows", strings.Join(ids(workflows), ",")))
	}
	attrs = append(attrs, extra...)
	attrs = append(attrs, slog.String("auth", o.authMode()), slog.String("version", o.cfg.Version))
	o.log.LogAttrs(ctx, slog.LevelInfo, ListeningMessage, attrs...)
}

// browsable is addr with an unspecified host (0.0.0.0, ::, none) replaced
// by localhost, so that the logged URL can be opened as it is.
func browsable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// shutdownServer stops server and the OS gracefully, at most timeout:
// http.Server.Shutdown closes the listener at once, then waits for the
// handlers, and the runs' handlers end once OS.Shutdown has cancelled
// them and they have saved.
func (o *OS) shutdownServer(server *http.Server, served <-chan error, timeout time.Duration) error {
	start := time.Now()
	o.log.Info("shutting down: refusing new connections and runs, cancelling the runs in flight and waiting for them to be saved",
		slog.Int("runs_in_flight", o.runsInFlight()), slog.Float64("timeout_s", timeout.Seconds()))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- server.Shutdown(ctx) }()
	runsErr := o.Shutdown(ctx)
	httpErr := <-httpDone
	<-served // Serve returns ErrServerClosed once Shutdown began
	if runsErr != nil || httpErr != nil {
		_ = server.Close()
		return fmt.Errorf("agentos: shutdown did not finish within %s: %w", timeout, errors.Join(runsErr, httpErr))
	}
	o.log.Info("HTTP server stopped: the runs in flight are saved", slog.Float64("took_s", seconds(time.Since(start))))
	return nil
}

// runsInFlight counts the runs executing in this process that a shutdown
// cancels: streamed and answered runs, and background runs without a
// durable queue.
func (o *OS) runsInFlight() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := make(map[*inflightRun]bool, len(o.inflight))
	for _, r := range o.inflight {
		seen[r] = true // a forked run is known by two ids
	}
	return len(seen)
}

// seconds is d in seconds, rounded to the millisecond, for the log.
func seconds(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }
