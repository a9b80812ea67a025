package durable_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestZZDiag(t *testing.T) {
	for _, attempts := range []int{1, 2} {
		t.Run(fmt.Sprint(attempts), func(t *testing.T) {
			buf := &syncBuf{}
			stuck := newBlocker()
			var charges atomic.Int32
			charge := chargeTool(t, &charges)
			settings := func(name string) func(c *durable.Config) {
				return func(c *durable.Config) {
					c.MaxAttempts = attempts
					c.LockGrace = durable.MinLockGrace
					c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})).With("q", name)
				}
			}
			replies := []scripted.Reply{scripted.ToolCall("charge", `{}`), scripted.ToolCall("work", `{}`), scripted.Text("finished elsewhere")}
			f := newFixture(t, replies, []tool.Tool{charge, stuck.tool(t, false)}, settings("exec-1"))
			t.Cleanup(stuck.open)
			accepted, err := f.submit(t, "s1", "go", "")
			require.NoError(t, err)
			<-stuck.started
			fmt.Fprintf(buf, "---- %s crash\n", time.Now().Format("15:04:05.000"))
			durable.Crash(f.queue)
			fmt.Fprintf(buf, "---- %s crashed; start exec-2\n", time.Now().Format("15:04:05.000"))
			f.start(t, "exec-2", settings("exec-2"))
			fmt.Fprintf(buf, "---- %s started exec-2\n", time.Now().Format("15:04:05.000"))
			deadline := time.Now().Add(20 * time.Second)
			for {
				rec, err := f.store.GetRun(t.Context(), accepted.RunID, "")
				if err == nil && rec.Run.Status.Terminal() && rec.Run.Status != run.StatusPaused {
					return
				}
				if time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			path := strings.TrimPrefix(f.dbURL, "sqlite:file:")
			db, err := sql.Open("sqlite", path)
			require.NoError(t, err)
			defer db.Close()
			dump := func(q string) {
				rows, err := db.Query(q)
				if err != nil {
					fmt.Fprintln(os.Stderr, "query", q, err)
					return
				}
				cols, _ := rows.Columns()
				fmt.Fprintln(os.Stderr, "==", q, cols)
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					_ = rows.Scan(ptrs...)
					for i := range vals {
						if b, ok := vals[i].([]byte); ok {
							vals[i] = string(b)
						}
					}
					fmt.Fprintln(os.Stderr, vals...)
				}
				rows.Close()
			}
			dump("SELECT workflow_uuid, status, executor_id, queue_name, queue_partition_key, application_version, started_at_epoch_ms, updated_at, recovery_attempts, owner_xid FROM workflow_status")
			dump("SELECT * FROM agno_executors")
			dump("SELECT workflow_uuid, function_id, function_name, error FROM operation_outputs")
			dump("SELECT run_id, status FROM agno_runs")
			fmt.Fprintln(os.Stderr, "==== now", time.Now().Format("15:04:05.000"))
			fmt.Fprintln(os.Stderr, buf.String())
			stacks := make([]byte, 1<<22)
			n := runtime.Stack(stacks, true)
			fmt.Fprintln(os.Stderr, string(stacks[:n]))
			t.Fatal("hung")
		})
	}
}
