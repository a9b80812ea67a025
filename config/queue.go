package config

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/dburl"
)

// ExecutorIDEnv names this process on the durable queue when the file sets
// no queue.executor_id.
const ExecutorIDEnv = "AGNOGO_EXECUTOR_ID"

// unlimitedConcurrency stands for "no cap" on the durable queue.
const unlimitedConcurrency = 1 << 20

// StartQueue starts the durable queue for background runs, when the file
// wants one (queue.durable, the default), and returns it with the event log
// the server must share (pass both in agentos.Config). It resumes the runs
// this executor left unfinished. With queue.durable false it returns nils.
// [OS.Close] stops the queue.
func (o *OS) StartQueue(ctx context.Context, opts ServerOptions) (*durable.Queue, *eventlog.Memory, error) {
	if !o.File.Queue.Durable {
		return nil, nil, nil
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	target, err := dburl.Parse(o.dbURL)
	if err != nil {
		return nil, nil, err
	}
	dbosURL := target.URL
	if target.Kind == dburl.SQLite {
		path, err := filepath.Abs(target.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("queue database: %w", err)
		}
		dbosURL = "sqlite:file:" + path
	}
	var runners []run.Runner
	for _, id := range o.AgentIDs {
		if a, ok := o.Agents[id]; ok {
			runners = append(runners, a)
		}
	}
	concurrency := backgroundConcurrency(o.File, opts)
	if concurrency < 0 {
		concurrency = unlimitedConcurrency
	}
	events := agentos.NewEventLog()
	q, err := durable.New(ctx, durable.Config{
		DatabaseURL:    dbosURL,
		Store:          o.Store,
		Runners:        runners,
		Events:         events,
		ExecutorID:     cmp.Or(o.File.Queue.ExecutorID, opts.Getenv(ExecutorIDEnv), defaultExecutorID(dbosURL)),
		MaxConcurrency: concurrency,
		MaxQueueDepth:  o.File.Queue.MaxQueueDepth,
		MaxAttempts:    o.File.Queue.MaxAttempts,
		LockGrace:      time.Duration(o.File.Queue.LockGraceSeconds) * time.Second,
		Retention:      retention(o.File.Queue.RetentionSeconds),
		Logger:         opts.Logger,
	})
	if err != nil {
		return nil, nil, err
	}
	if err := q.Launch(); err != nil {
		_ = q.Shutdown(0)
		return nil, nil, err
	}
	o.queue = q
	return q, events, nil
}

// defaultExecutorID is the host name and a digest of the database: stable
// across restarts of one server, different for two servers on one host.
func defaultExecutorID(database string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "agnogo"
	}
	sum := sha256.Sum256([]byte(database))
	return host + "-" + hex.EncodeToString(sum[:4])
}

// retention is queue.retention_seconds as durable.Config.Retention: 0
// keeps records forever (a negative retention there).
func retention(seconds int) time.Duration {
	if seconds <= 0 {
		return -1
	}
	return time.Duration(seconds) * time.Second
}
