package durable_test

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/internal/gatedmodel"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tool"
)

// testRedis is the test Redis with a key prefix of this test's own.
type testRedis struct {
	addr   string
	prefix string
	client *redis.Client
}

func newTestRedis(t *testing.T) *testRedis {
	t.Helper()
	r := &testRedis{addr: testdb.RedisAddr(t), prefix: testdb.UniqueName(t, "agnotest")}
	r.client = r.connect(t, r.addr)
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		keys, _ := r.client.Keys(ctx, r.prefix+":*").Result()
		if len(keys) > 0 {
			r.client.Del(ctx, keys...)
		}
	})
	return r
}

// connect opens a client to addr, closed when the test ends.
func (r *testRedis) connect(t *testing.T, addr string) *redis.Client {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// with configures a queue to use client (r's own when nil) under r's prefix.
func (r *testRedis) with(client *redis.Client, more ...func(*durable.Config)) func(*durable.Config) {
	if client == nil {
		client = r.client
	}
	return func(c *durable.Config) {
		c.Redis, c.RedisPrefix = client, r.prefix
		for _, f := range more {
			f(c)
		}
	}
}

// eventsKey names a run's event stream for q.
func eventsKey(q *durable.Queue, runID string) string {
	return q.RedisKeyPrefix() + ":os:events:" + runID + ":1:events"
}

// newModelFixture is newFixture on SQLite with any model.
func newModelFixture(t *testing.T, m model.Model, tools []tool.Tool, configure func(*durable.Config)) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agnogo.db")
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	f := &fixture{dbURL: "sqlite:file:" + path, store: store, events: eventlog.NewMemory(eventlog.MemoryConfig{})}
	f.agent, err = agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: m, Store: store, Tools: tools})
	require.NoError(t, err)
	f.queue = f.start(t, "exec-1", configure)
	return f
}

// following collects, in a goroutine, what a queue's Events yields while
// following a run.
type following struct {
	mu      sync.Mutex
	entries []eventlog.Entry
	err     error
	grew    chan struct{} // closed, and replaced, when an entry arrives
	done    chan struct{}
}

func follow(t *testing.T, q *durable.Queue, runID string) *following {
	f := &following{grew: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for e, err := range q.Events(t.Context(), runID, -1, true) {
			f.mu.Lock()
			if err != nil {
				f.err = err
			} else {
				f.entries = append(f.entries, e)
				close(f.grew)
				f.grew = make(chan struct{})
			}
			f.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return f
}

func (f *following) seen() []eventlog.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]eventlog.Entry(nil), f.entries...)
}

// waitFor waits until cond holds for what was seen, checking it again as
// each entry arrives.
func (f *following) waitFor(t *testing.T, within time.Duration, cond func([]eventlog.Entry) bool, what string) {
	t.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		f.mu.Lock()
		seen, grew := append([]eventlog.Entry(nil), f.entries...), f.grew
		f.mu.Unlock()
		if cond(seen) {
			return
		}
		select {
		case <-grew:
		case <-f.done:
			require.True(t, cond(f.seen()), "the follow ended: %s; seen %v", what, summary(f.seen()))
			return
		case <-timeout.C:
			t.Fatalf("%s; seen %v", what, summary(f.seen()))
		}
	}
}

// end waits for the follow to end and returns what it yielded.
func (f *following) end(t *testing.T) []eventlog.Entry {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(45 * time.Second):
		t.Fatalf("the follow did not end with the run; seen %v", summary(f.seen()))
	}
	require.NoError(t, f.err)
	return f.seen()
}

// collect gathers a finite Events sequence.
func collect(t *testing.T, events iter.Seq2[eventlog.Entry, error]) []eventlog.Entry {
	t.Helper()
	var out []eventlog.Entry
	for e, err := range events {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// summary names each entry as index:name.
func summary(entries []eventlog.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = itoa(e.Index) + ":" + e.Name
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// contents are the texts of the RunContent events.
func contents(entries []eventlog.Entry) []string {
	var out []string
	for _, e := range entries {
		if e.Name != run.EventRunContent {
			continue
		}
		var content struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(e.Data, &content) == nil && content.Content != "" {
			out = append(out, content.Content)
		}
	}
	return out
}

func hasContents(want ...string) func([]eventlog.Entry) bool {
	return func(entries []eventlog.Entry) bool {
		got := contents(entries)
		return len(got) >= len(want) && strings.Join(got[:len(want)], "|") == strings.Join(want, "|")
	}
}

// TestRedisLiveEventsReachAnotherReplica: a run executes on replica A; a
// follower on replica B gets its content deltas while the model call that
// produces them is still running — the durable stream, written at step
// boundaries, does not have them yet — and then every event of the run,
// each index once, exactly as the durable stream holds them in the end.
func TestRedisLiveEventsReachAnotherReplica(t *testing.T) {
	t.Parallel()
	rdb := newTestRedis(t)
	m := gatedmodel.New()
	t.Cleanup(m.Open)
	f := newModelFixture(t, m, nil, rdb.with(nil))
	accepted, err := f.submit(t, "s1", "hello", "")
	require.NoError(t, err)
	select {
	case <-m.Streamed(): // executing on A, inside the model call
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not start")
	}

	b := f.start(t, "exec-2", rdb.with(nil))
	onB := follow(t, b, accepted.RunID)
	onB.waitFor(t, 10*time.Second, hasContents("Hel", "lo, "), "B gets the deltas of the running model call")

	databaseOnly := f.start(t, "exec-3", nil)
	before := collect(t, databaseOnly.Events(t.Context(), accepted.RunID, -1, false))
	require.Empty(t, contents(before), "the durable stream gets the model call's events only when the call ends")

	m.Open()
	got := onB.end(t)
	require.Equal(t, run.EventRunCompleted, got[len(got)-1].Name, summary(got))
	require.Equal(t, []string{"Hel", "lo, ", "world"}, contents(got))
	for i, e := range got {
		require.Equal(t, int64(i), e.Index, "every index once, in order: %v", summary(got))
	}
	require.Equal(t, run.StatusCompleted, f.wait(t, accepted.RunID).Status)
	var stored []eventlog.Entry
	require.Eventually(t, func() bool { // the workflow writes its last step's events as it ends
		stored = collect(t, databaseOnly.Events(t.Context(), accepted.RunID, -1, false))
		return len(stored) > 0 && stored[len(stored)-1].Name == run.EventRunCompleted
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, summary(stored), summary(got), "the live view is the durable one, sooner")

	ctx := t.Context()
	status, err := rdb.client.Get(ctx, f.queue.RedisKeyPrefix()+":os:events:"+accepted.RunID+":status").Result()
	require.NoError(t, err)
	require.Equal(t, string(run.StatusCompleted), status)
	ttl, err := rdb.client.TTL(ctx, eventsKey(f.queue, accepted.RunID)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 25*time.Minute)
	require.LessOrEqual(t, ttl, 30*time.Minute)
	msgs, err := rdb.client.XRange(ctx, eventsKey(f.queue, accepted.RunID), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, msgs, len(got))
	for i, msg := range msgs {
		require.Equal(t, itoa(int64(i))+"-1", msg.ID, "an entry's ID is its event index")
		require.Equal(t, itoa(int64(i)), msg.Values["idx"])
		require.Equal(t, got[i].Name, msg.Values["name"])
		require.JSONEq(t, string(got[i].Data), msg.Values["data"].(string))
	}

	replay := collect(t, b.Events(ctx, accepted.RunID, 2, false))
	require.Equal(t, summary(got[3:]), summary(replay), "a replay after an index, from both sources")
}

// TestRedisCancelReachesTheExecutingReplica: a run executing on replica A
// is cancelled through replica B. Both poll the database for cancels only
// hourly here, so the run stops in time only through the Redis signal.
func TestRedisCancelReachesTheExecutingReplica(t *testing.T) {
	t.Parallel()
	rdb := newTestRedis(t)
	hourly := rdb.with(nil, func(c *durable.Config) { c.CancelCheckInterval = time.Hour })
	started, stopped := make(chan struct{}), make(chan time.Time, 1)
	work, err := tool.New(tool.Config{Name: "work"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		stopped <- time.Now()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("never")}, []tool.Tool{work}, hourly)
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	<-started // executing on A
	b := f.start(t, "exec-2", hourly)
	require.Eventually(t, func() bool {
		channel := f.queue.RedisKeyPrefix() + ":run:cancellation"
		subs, err := rdb.client.PubSubNumSub(t.Context(), channel).Result()
		return err == nil && subs[channel] == 2
	}, 10*time.Second, 5*time.Millisecond, "both replicas listen for cancels")

	sent := time.Now()
	known, err := b.Cancel(t.Context(), accepted.RunID)
	require.NoError(t, err)
	require.True(t, known)
	select {
	case at := <-stopped:
		t.Logf("a cancel through replica B stopped the run on replica A in %v", at.Sub(sent))
		require.Less(t, at.Sub(sent), promptly, "promptly, not after the hour the database watch would take")
	case <-time.After(20 * time.Second):
		t.Fatal("the run on A was not stopped: no cancel signal arrived")
	}
	require.Equal(t, run.StatusCancelled, f.wait(t, accepted.RunID).Status)

	intent, err := rdb.client.Get(t.Context(), f.queue.RedisKeyPrefix()+":run:cancellation:"+accepted.RunID).Result()
	require.NoError(t, err)
	require.Equal(t, "1", intent)
	ttl, err := rdb.client.TTL(t.Context(), f.queue.RedisKeyPrefix()+":run:cancellation:"+accepted.RunID).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 23*time.Hour)
}

// TestRedisDownMidRun: Redis goes away while a run executes on A and B
// follows it. The run completes, B's follow goes on from the durable
// stream without losing or repeating an event, Events answers without
// Redis, and A logs the outage once.
func TestRedisDownMidRun(t *testing.T) {
	t.Parallel()
	rdb := newTestRedis(t)
	proxy := newProxy(t, rdb.addr)
	logs := &recorder{}
	m := gatedmodel.New()
	t.Cleanup(m.Open)
	f := newModelFixture(t, m, nil, rdb.with(rdb.connect(t, proxy.addr()), func(c *durable.Config) { c.Logger = slog.New(logs) }))
	accepted, err := f.submit(t, "s1", "hello", "")
	require.NoError(t, err)
	select {
	case <-m.Streamed():
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not start")
	}
	b := f.start(t, "exec-2", rdb.with(rdb.connect(t, proxy.addr())))
	onB := follow(t, b, accepted.RunID)
	onB.waitFor(t, 10*time.Second, hasContents("Hel", "lo, "), "B follows through Redis")

	proxy.close() // Redis is gone for both replicas
	m.Open()
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "Hello, world", out.Content)

	got := onB.end(t)
	require.Equal(t, run.EventRunCompleted, got[len(got)-1].Name, summary(got))
	require.Equal(t, []string{"Hel", "lo, ", "world"}, contents(got))
	for i, e := range got {
		require.Equal(t, int64(i), e.Index, "every index once, in order: %v", summary(got))
	}
	require.Equal(t, summary(got), summary(collect(t, b.Events(t.Context(), accepted.RunID, -1, false))), "a replay without Redis")
	require.Equal(t, summary(got), summary(collect(t, b.Events(t.Context(), accepted.RunID, -1, true))), "a follow without Redis")
	require.Eventually(t, func() bool { return logs.count("Redis is unreachable") > 0 }, 10*time.Second, 10*time.Millisecond,
		"A logs the outage: %v", logs.all())
	require.Equal(t, 1, logs.count("Redis is unreachable"), "once: %v", logs.all())
}

// recorder is a slog handler keeping the messages logged.
type recorder struct {
	mu       sync.Mutex
	messages []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.messages = append(r.messages, rec.Message)
	return nil
}

func (r *recorder) count(substring string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.messages {
		if strings.Contains(m, substring) {
			n++
		}
	}
	return n
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.messages...)
}

// proxy forwards TCP connections to a server until closed; then its port
// refuses connections, as a server that went away does.
type proxy struct {
	listener net.Listener
	target   string

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{listener: listener, target: target}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.listener.Addr().String() }

func (p *proxy) serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go pipe(server, client)
		go pipe(client, server)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.listener.Close()
	for _, c := range conns {
		c.Close()
	}
}
