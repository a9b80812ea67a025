package durable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
)

// Redis, when configured ([Config.Redis]), carries across replicas what the
// database carries slowly: each event of a run as it is appended (the
// durable stream gets them step by step) and each cancel (the database
// watcher polls). It is never the only copy: every event still goes to the
// durable stream and every cancel still marks the workflow, so a Redis
// fault only slows the live view down; it never fails a run or a request.
//
// Keys and channels, with P the prefix ([Config.RedisPrefix]) and N the
// namespace of the database ([Queue.RedisKeyPrefix] is "P:N"):
//
//	P:N:os:events:<run_id>:1:events  a stream of the run's events: entry ID "<event_index>-1",
//	                                 fields idx, name, data; MAXLEN ~ 10000; expires 30 min
//	                                 after the last refresh (refreshed every 10 min while written)
//	P:N:os:events:<run_id>:status    the run's status: PENDING, RUNNING, then the final one
//	P:N:run:cancellation             channel: the id of each cancelled run
//	P:N:run:cancellation:<run_id>    "1" for a day after the run was cancelled
//
// The namespace is 16 hex digits drawn at random by the first queue with
// Redis to open the database and kept in it (the one-row table
// agno_namespace, beside agno_executors); every replica on that database
// reads the same one. Run ids repeat across databases — an Idempotency-Key
// names the same run id wherever it is sent — so without it two
// deployments sharing one Redis, or a database dropped and created again
// under the same URL, would write into each other's streams (and have
// their writes refused as already-used indices).
//
// An entry's stream ID is its event index, so a reader starts right after
// the index it holds, and Redis refuses an index the stream already has: an
// execution that numbers events again after a crash cannot overwrite what
// followers saw.
//
// Writes go through one goroutine per queue, in order, batched into one
// MULTI/EXEC round trip: a run only hands its event over (or drops it when
// the writer is behind; the durable stream still has it). After a failure
// to reach Redis the writer pauses, from 1 s doubling to 30 s, dropping
// what comes meanwhile, and logs once per outage.

// Defaults and bounds of the Redis link.
const (
	// DefaultRedisPrefix starts every Redis key and channel of the queue.
	DefaultRedisPrefix = "agno"
	// redisEventTTL is how long a run's stream and status outlive their
	// last refresh.
	redisEventTTL = 1800 * time.Second
	// redisMaxLen caps a run's stream (approximately: MAXLEN ~).
	redisMaxLen = 10000
	// redisBlock is how long one blocking read of a follower waits.
	redisBlock = 15 * time.Second
	// redisReadCount bounds the entries one read returns.
	redisReadCount = 512
	// redisCancelTTL is how long a cancel intent stays readable.
	redisCancelTTL = 24 * time.Hour
	// redisWriteTimeout bounds one batch of writes.
	redisWriteTimeout = 2 * time.Second
	// redisCheckTimeout bounds the short reads around a follow.
	redisCheckTimeout = time.Second
	// redisBacklog is how many writes may wait for the writer; beyond it
	// they are dropped.
	redisBacklog = 8192
	// redisBatch is the most writes sent in one round trip.
	redisBatch = 256
	// redisMaxBackoff bounds the pause after a failure to reach Redis.
	redisMaxBackoff = 30 * time.Second
	// redisDropWarning spaces the warnings about dropped writes.
	redisDropWarning = 30 * time.Second
)

// namespaceTable keeps the database's Redis namespace, beside the
// heartbeat table.
const namespaceTable = "agno_namespace"

// redisNamespace returns the database's Redis namespace, drawing and
// storing it when the database has none yet. Concurrent first opens agree:
// the first insert wins and every opener reads it back.
func redisNamespace(ctx context.Context, eng *engine) (string, error) {
	table := eng.table(namespaceTable)
	if _, err := eng.exec(ctx, eng.sql(`CREATE TABLE IF NOT EXISTS %s (id INTEGER PRIMARY KEY, namespace TEXT NOT NULL)`, table)); err != nil {
		return "", fmt.Errorf("durable: create %s: %w", namespaceTable, err)
	}
	var draw [8]byte
	if _, err := rand.Read(draw[:]); err != nil {
		return "", fmt.Errorf("durable: draw the Redis namespace: %w", err)
	}
	if _, err := eng.exec(ctx, eng.sql(`INSERT INTO %s (id, namespace) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, table),
		hex.EncodeToString(draw[:])); err != nil {
		return "", fmt.Errorf("durable: store the Redis namespace: %w", err)
	}
	var namespace string
	if err := eng.queryRow(ctx, eng.sql(`SELECT namespace FROM %s WHERE id = 1`, table), nil, &namespace); err != nil {
		return "", fmt.Errorf("durable: read the Redis namespace: %w", err)
	}
	if namespace == "" {
		return "", fmt.Errorf("durable: %s holds an empty Redis namespace", namespaceTable)
	}
	return namespace, nil
}

// redisLink is a queue's connection to Redis. A nil link is no Redis: its
// methods do nothing.
type redisLink struct {
	client *redis.Client
	prefix string // P:N, see above
	log    *slog.Logger

	ops     chan redisOp
	dropped atomic.Int64 // writes dropped since the last warning
	start   sync.Once
	stop    sync.Once
	quit    chan struct{} // closed to stop the writer
	done    chan struct{} // closed when the writer has stopped
}

// newRedisLink returns the link over client, or nil without one.
func newRedisLink(client *redis.Client, prefix string, log *slog.Logger) *redisLink {
	if client == nil {
		return nil
	}
	return &redisLink{client: client, prefix: prefix, log: log, ops: make(chan redisOp, redisBacklog),
		quit: make(chan struct{}), done: make(chan struct{})}
}

// eventsKey names a run's event stream.
func (l *redisLink) eventsKey(runID string) string {
	return l.prefix + ":os:events:" + runID + ":1:events"
}

// statusKey names a run's status.
func (l *redisLink) statusKey(runID string) string {
	return l.prefix + ":os:events:" + runID + ":status"
}

// cancelChannel names the channel cancels are published on.
func (l *redisLink) cancelChannel() string { return l.prefix + ":run:cancellation" }

// cancelKey names a run's cancel intent.
func (l *redisLink) cancelKey(runID string) string { return l.prefix + ":run:cancellation:" + runID }

// entryID is the stream ID of the event with the given index.
func entryID(index int64) string { return strconv.FormatInt(index, 10) + "-1" }

// idAfter is the stream ID a blocking read starts after to get the events
// whose index is above after.
func idAfter(after int64) string {
	if after < 0 {
		return "0-0"
	}
	return entryID(after)
}

// idFrom is the first stream ID of the events whose index is above after,
// for an inclusive range.
func idFrom(after int64) string { return strconv.FormatInt(max(after+1, 0), 10) + "-0" }

// redisOp is one write: an event (with the run's final status when the
// event is its final one), a status, or a cancel.
type redisOp struct {
	runID  string
	event  *eventlog.Entry
	status run.Status
	cancel bool
}

// event hands a run's event to the writer; final is the status the event
// ends the run with, if it does.
func (l *redisLink) event(runID string, e eventlog.Entry, final run.Status) {
	if l != nil {
		l.enqueue(redisOp{runID: runID, event: &e, status: final})
	}
}

// status hands a run's status to the writer.
func (l *redisLink) status(runID string, status run.Status) {
	if l != nil {
		l.enqueue(redisOp{runID: runID, status: status})
	}
}

// cancel hands a run's cancel signal to the writer: the intent key and a
// message on the cancel channel.
func (l *redisLink) cancel(runID string) {
	if l != nil {
		l.enqueue(redisOp{runID: runID, cancel: true})
	}
}

// enqueue never blocks: a writer that is behind costs the live view, not
// the run.
func (l *redisLink) enqueue(op redisOp) {
	select {
	case l.ops <- op:
	default:
		l.dropped.Add(1)
	}
}

// launch starts the writer.
func (l *redisLink) launch() {
	if l != nil {
		l.start.Do(func() { go l.write() })
	}
}

// close stops the writer after it sent what is waiting, waiting at most
// timeout.
func (l *redisLink) close(timeout time.Duration) {
	if l == nil {
		return
	}
	l.start.Do(func() { close(l.done) }) // never launched: nothing to wait for
	l.stop.Do(func() { close(l.quit) })
	select {
	case <-l.done:
	case <-time.After(timeout):
	}
}

// redisWriter is the writer goroutine's own state.
type redisWriter struct {
	refreshed map[string]time.Time // per run: when its keys' TTL was last set
	warned    map[string]bool      // runs whose refused write was logged
	retryAt   time.Time            // no writes before, after a failure
	backoff   time.Duration
	down      bool
	dropWarn  time.Time
}

// write sends the queued writes, in order, until the link closes; then it
// sends what is still waiting, once.
func (l *redisLink) write() {
	defer close(l.done)
	w := &redisWriter{refreshed: map[string]time.Time{}, warned: map[string]bool{}, backoff: time.Second}
	batch := make([]redisOp, 0, redisBatch)
	for {
		select {
		case op := <-l.ops:
			batch = append(batch[:0], op)
		case <-l.quit:
			for {
				batch = l.drain(batch[:0])
				if len(batch) == 0 {
					return
				}
				l.send(w, batch)
			}
		}
		l.send(w, l.drain(batch))
	}
}

// drain adds the waiting writes to batch, up to a batch's size.
func (l *redisLink) drain(batch []redisOp) []redisOp {
	for len(batch) < redisBatch {
		select {
		case op := <-l.ops:
			batch = append(batch, op)
		default:
			return batch
		}
	}
	return batch
}

// send writes a batch in one MULTI/EXEC: a follower woken by an event also
// finds the status written with it.
func (l *redisLink) send(w *redisWriter, batch []redisOp) {
	now := time.Now()
	if n := l.dropped.Load(); n > 0 && now.Sub(w.dropWarn) >= redisDropWarning {
		l.dropped.Add(-n)
		w.dropWarn = now
		l.log.Warn("durable: Redis writes dropped, the writer was behind; followers read those events from the database",
			slog.Int64("dropped", n))
	}
	if now.Before(w.retryAt) {
		w.forget(batch)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisWriteTimeout)
	defer cancel()
	pipe := l.client.TxPipeline()
	var owners []string // the run of each queued command, in order
	for _, op := range batch {
		queued := pipe.Len()
		switch {
		case op.cancel:
			pipe.Set(ctx, l.cancelKey(op.runID), "1", redisCancelTTL)
			pipe.Publish(ctx, l.cancelChannel(), op.runID)
		case op.event != nil:
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: l.eventsKey(op.runID), MaxLen: redisMaxLen, Approx: true,
				ID: entryID(op.event.Index), Values: []any{"idx", op.event.Index, "name", op.event.Name, "data", op.event.Data}})
			if now.Sub(w.refreshed[op.runID]) >= redisEventTTL/3 {
				pipe.Expire(ctx, l.eventsKey(op.runID), redisEventTTL)
				pipe.Expire(ctx, l.statusKey(op.runID), redisEventTTL)
				w.refreshed[op.runID] = now
			}
		}
		if op.status != "" {
			pipe.Set(ctx, l.statusKey(op.runID), string(op.status), redisEventTTL)
			if op.status.Terminal() {
				pipe.Expire(ctx, l.eventsKey(op.runID), redisEventTTL)
			}
		}
		for range pipe.Len() - queued {
			owners = append(owners, op.runID)
		}
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil && !replyError(err) {
		w.retryAt = now.Add(w.backoff)
		if !w.down {
			l.log.Warn("durable: Redis is unreachable; live events and cancels across replicas go through the database until it answers",
				slog.String("error", err.Error()), slog.Duration("retry_in", w.backoff))
		}
		w.down, w.backoff = true, min(2*w.backoff, redisMaxBackoff)
		w.forget(batch)
		return
	}
	if w.down {
		l.log.Info("durable: Redis answers again")
		w.down, w.backoff = false, time.Second
	}
	for i, cmd := range cmds {
		err := cmd.Err()
		if err == nil || i >= len(owners) || w.warned[owners[i]] {
			continue
		}
		w.warned[owners[i]] = true
		level := slog.LevelWarn
		if strings.Contains(err.Error(), "equal or smaller") {
			// An index the stream holds already: an execution taken over
			// or repeated numbers events again. Expected, and fenced.
			level = slog.LevelInfo
		}
		l.log.Log(ctx, level, "durable: Redis refused a write for a run; its followers read the rest from the database",
			slog.String("run_id", owners[i]), slog.String("error", err.Error()))
	}
	w.forget(batch)
}

// forget drops the state of the runs in batch that ended.
func (w *redisWriter) forget(batch []redisOp) {
	for _, op := range batch {
		if op.status.Terminal() {
			delete(w.refreshed, op.runID)
			delete(w.warned, op.runID)
		}
	}
}

// replyError reports whether err is Redis's answer to a command (the
// command failed) rather than a failure to reach Redis.
func replyError(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

// lastIndex is the highest event index in a run's Redis stream; -1 when it
// has none.
func (l *redisLink) lastIndex(ctx context.Context, runID string) (int64, error) {
	if l == nil {
		return -1, nil
	}
	ctx, cancel := context.WithTimeout(ctx, redisCheckTimeout)
	defer cancel()
	last, err := l.client.XRevRangeN(ctx, l.eventsKey(runID), "+", "-", 1).Result()
	if err != nil {
		return -1, fmt.Errorf("durable: read the run's last event in Redis: %w", err)
	}
	if len(last) == 0 {
		return -1, nil
	}
	e, ok := parseEntry(last[0])
	if !ok {
		return -1, fmt.Errorf("durable: run %s: unreadable Redis entry %s", runID, last[0].ID)
	}
	return e.Index, nil
}

// parseEntry reads an event back from a stream entry.
func parseEntry(msg redis.XMessage) (eventlog.Entry, bool) {
	idx, _ := msg.Values["idx"].(string)
	name, _ := msg.Values["name"].(string)
	data, _ := msg.Values["data"].(string)
	index, err := strconv.ParseInt(idx, 10, 64)
	if err != nil || name == "" {
		return eventlog.Entry{}, false
	}
	return eventlog.Entry{Index: index, Name: name, Data: []byte(data)}, true
}

// snapshot reads the events of a run's Redis stream whose index is above
// after.
func (l *redisLink) snapshot(ctx context.Context, runID string, after int64) ([]eventlog.Entry, error) {
	if l == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, redisCheckTimeout)
	defer cancel()
	msgs, err := l.client.XRangeN(ctx, l.eventsKey(runID), idFrom(after), "+", redisMaxLen).Result()
	if err != nil {
		return nil, fmt.Errorf("durable: read the run's events in Redis: %w", err)
	}
	entries := make([]eventlog.Entry, 0, len(msgs))
	for _, msg := range msgs {
		if e, ok := parseEntry(msg); ok {
			entries = append(entries, e)
		}
	}
	return entries, nil
}

// liveItem is one step of following a run in Redis: an event, a report
// that the stream stayed silent for a whole blocking read, or the news that
// the run is over and every event Redis has was delivered.
type liveItem struct {
	entry eventlog.Entry
	idle  bool
	over  bool
}

// tail follows a run's Redis stream from the events after after, in a
// goroutine that ends with ctx. It ends its channel when Redis fails, when
// it no longer knows the run, and after an over item. ok is false when
// Redis does not know the run (or cannot be reached): then there is no
// channel.
func (l *redisLink) tail(ctx context.Context, runID string, after int64) (items <-chan liveItem, ok bool) {
	if l == nil {
		return nil, false
	}
	check, cancel := context.WithTimeout(ctx, redisCheckTimeout)
	known, err := l.client.Exists(check, l.statusKey(runID), l.eventsKey(runID)).Result()
	cancel()
	if err != nil || known == 0 {
		return nil, false
	}
	out := make(chan liveItem, 64)
	go func() {
		defer close(out)
		send := func(item liveItem) bool {
			select {
			case out <- item:
				return true
			case <-ctx.Done():
				return false
			}
		}
		from := idAfter(after)
		for {
			// A blocking read holds one pooled connection; ctx ending does
			// not interrupt it, so a stopped follower lets it time out.
			streams, err := l.client.XRead(ctx, &redis.XReadArgs{Streams: []string{l.eventsKey(runID), from},
				Count: redisReadCount, Block: redisBlock}).Result()
			if ctx.Err() != nil {
				return
			}
			if err != nil && !errors.Is(err, redis.Nil) {
				l.log.Debug("durable: following a run in Redis failed; reading the database", slog.String("run_id", runID), slog.String("error", err.Error()))
				return
			}
			var last eventlog.Entry
			for _, stream := range streams {
				for _, msg := range stream.Messages {
					from = msg.ID
					if e, ok := parseEntry(msg); ok {
						last = e
						if !send(liveItem{entry: e}) {
							return
						}
					}
				}
			}
			idle := errors.Is(err, redis.Nil)
			if !idle && !run.EndsRun(runID, last.Name, last.Data) {
				continue
			}
			// Silent, or the last event ends the run: does the status say
			// the run is over?
			status, err := l.client.Get(ctx, l.statusKey(runID)).Result()
			switch {
			case errors.Is(err, redis.Nil):
				return // forgotten (expired): the database has the rest
			case err != nil:
				return
			case run.Status(status).Terminal():
				send(liveItem{over: true})
				return
			case idle && !send(liveItem{idle: true}):
				return
			}
		}
	}()
	return out, true
}

// watchRedisCancels stops a run executing here as soon as a cancel for it
// arrives on the cancel channel, until ctx ends. Each (re)subscription
// also reads the cancel intents of the runs executing here, for the
// cancels sent while it was not listening. The workflow's state decides:
// a message only makes the check happen now instead of at the next poll.
func (q *Queue) watchRedisCancels(ctx context.Context) {
	l := q.redis
	sub := l.client.Subscribe(ctx, l.cancelChannel())
	defer func() { _ = sub.Close() }()
	messages := sub.ChannelWithSubscriptions(redis.WithChannelSize(256))
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-messages:
			if !ok {
				return
			}
			switch msg := msg.(type) {
			case *redis.Message:
				if ids := q.runningIDs(msg.Payload); len(ids) > 0 {
					q.checkRunning(ctx, ids)
				}
			case *redis.Subscription:
				q.checkCancelIntents(ctx)
			}
		}
	}
}

// checkCancelIntents stops the runs executing here whose cancel intent is
// set in Redis and whose workflow is cancelled.
func (q *Queue) checkCancelIntents(ctx context.Context) {
	ids := q.runningIDs()
	if len(ids) == 0 {
		return
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = q.redis.cancelKey(id)
	}
	check, cancel := context.WithTimeout(ctx, redisCheckTimeout)
	defer cancel()
	values, err := q.redis.client.MGet(check, keys...).Result()
	if err != nil {
		return // the database watcher still looks
	}
	var intended []string
	for i, v := range values {
		if v != nil {
			intended = append(intended, ids[i])
		}
	}
	if len(intended) > 0 {
		q.checkRunning(ctx, intended)
	}
}
