package config

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/storage/dburl"
)

// ExecutorIDEnv names this process on the durable queue when the file sets
// no queue.executor_id.
const ExecutorIDEnv = "AGNOGO_EXECUTOR_ID"

// unlimitedConcurrency stands for "no cap" on the durable queue.
const unlimitedConcurrency = 1 << 20

// redisPingTimeout bounds the check, at start, that the redis URL answers.
const redisPingTimeout = 3 * time.Second

// StartQueue starts the durable queue for background runs, when the file
// wants one (queue.durable, the default), and returns it with the event log
// the server must share (pass both in agentos.Config). It resumes the runs
// this executor left unfinished. With queue.durable false it returns nils.
// [OS.Close] stops the queue.
//
// The executor id is queue.executor_id, else $AGNOGO_EXECUTOR_ID, else the
// host name, opts.ListenAddr and a digest of the database: stable across
// restarts of one server, different for two servers on one host. An id a
// live server already uses is refused with an error naming executor_id
// (it wraps [durable.ErrExecutorInUse]).
//
// With a redis URL the queue also sends live events and cancels through
// Redis. A URL that cannot be parsed is an error; a Redis that does not
// answer at start is logged as a warning and the queue runs without it.
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
	dbosURL, err := target.QueueURL()
	if err != nil {
		return nil, nil, fmt.Errorf("queue database: %w", err)
	}
	runners := o.Runners() // native and external agents, and teams
	concurrency := backgroundConcurrency(o.File, opts)
	if concurrency < 0 {
		concurrency = unlimitedConcurrency
	}
	rdb, err := connectRedis(ctx, o.File.Redis, opts.Logger)
	if err != nil {
		return nil, nil, err
	}
	events := agentos.NewEventLog()
	executorID := cmp.Or(o.File.Queue.ExecutorID, opts.Getenv(ExecutorIDEnv), defaultExecutorID(opts.ListenAddr, dbosURL))
	q, err := durable.New(ctx, durable.Config{
		DatabaseURL:    dbosURL,
		Store:          o.Store,
		Runners:        runners,
		Events:         events,
		ExecutorID:     executorID,
		MaxConcurrency: concurrency,
		MaxQueueDepth:  o.File.Queue.MaxQueueDepth,
		MaxAttempts:    o.File.Queue.MaxAttempts,
		RetryDelay:     orNone(o.File.Queue.RetryDelaySeconds),
		Timeout:        orNone(o.File.Queue.TimeoutSeconds),
		LockGrace:      time.Duration(o.File.Queue.LockGraceSeconds) * time.Second,
		Retention:      orNone(o.File.Queue.RetentionSeconds),
		Redis:          rdb,
		Logger:         opts.Logger,
		Observer:       o.Observer,
	})
	if err != nil {
		if rdb != nil {
			_ = rdb.Close()
		}
		return nil, nil, err
	}
	registerQueueMetrics(o.Observer.Metrics(), q, opts.Logger)
	if err := q.Launch(); err != nil {
		_ = q.Shutdown(0)
		if rdb != nil {
			_ = rdb.Close()
		}
		if errors.Is(err, durable.ErrExecutorInUse) {
			err = fmt.Errorf("%w (the id is queue.executor_id, else $%s, else the host name, the listen address and the database)", err, ExecutorIDEnv)
		}
		return nil, nil, err
	}
	o.queue = q
	if rdb != nil {
		o.redis = rdb
	}
	return q, events, nil
}

// connectRedis opens the client for the redis URL; nil without one, or
// when Redis does not answer (the server then runs without it).
func connectRedis(ctx context.Context, url string, log *slog.Logger) (*redis.Client, error) {
	if url == "" {
		return nil, nil
	}
	options, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis: %w; want redis://[user:password@]host:port/db, rediss://… or unix://…", err)
	}
	client := redis.NewClient(options)
	ping, cancel := context.WithTimeout(ctx, redisPingTimeout)
	defer cancel()
	if err := client.Ping(ping).Err(); err != nil {
		_ = client.Close()
		log.Warn("redis does not answer; serving without it: events reach other replicas step by step through the database, cancels within 200 ms",
			slog.String("address", options.Addr), slog.String("error", err.Error()))
		return nil, nil
	}
	return client, nil
}

// defaultExecutorID is the host name, the listen address (when known) and
// a digest of the database: stable across restarts of one server,
// different for two servers on one host, which listen on different
// addresses.
func defaultExecutorID(listenAddr, database string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "agnogo"
	}
	sum := sha256.Sum256([]byte(database))
	if listenAddr == "" {
		return host + "-" + hex.EncodeToString(sum[:4])
	}
	return host + "-" + listenAddr + "-" + hex.EncodeToString(sum[:4])
}

// orNone is a number of seconds as a durable.Config duration, where 0 is
// "none" (a negative duration there) rather than the default.
func orNone(seconds int) time.Duration {
	if seconds <= 0 {
		return -1
	}
	return time.Duration(seconds) * time.Second
}
