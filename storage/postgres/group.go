package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// Group commit. Saves that arrive while others are being written wait and
// are then written together: in one transaction on one connection, their
// statements one save after another, and one COMMIT — so a busy server
// makes one commit (and one flush of the log) for many runs instead of one
// each, and a save takes one round trip plus its share of the COMMIT's.
// The first save to arrive while fewer than maxGroups groups are being
// written leads a group itself, so a save on an idle server goes out at
// once, as it would alone.
//
// Each group's saves run in the order of their keys (the session each
// locks first), so two groups in flight lock sessions in one order and
// never wait for each other in a cycle. When a save of a group fails, the
// group is rolled back and every save in it runs again in a transaction of
// its own, where the failing one fails alone.

// The bounds of group commit.
const (
	// maxGroups is how many groups are written at once, each on its own
	// connection; the pool's other connections serve the batched reads
	// (at most maxReadBatches) and every other statement.
	maxGroups = 2
	// maxGroupSize bounds the saves of one group, and so how long the
	// group holds the locks of its first save.
	maxGroupSize = 32
	// groupCommitTimeout bounds a group's COMMIT, which no one save's
	// context may cut short.
	groupCommitTimeout = 30 * time.Second
)

// errAlone tells a save that its group was undone and that it must run in
// a transaction of its own.
var errAlone = errors.New("postgres: the save runs alone")

// waitQueue holds work waiting for one of a bounded number of leaders,
// each of which takes a share of it at a time: the saves of group commit,
// the reads of batched reads.
type waitQueue[T any] struct {
	mu      sync.Mutex
	waiting []T
	leaders int // leaders at work
}

// take takes up to n of the waiting work, in the order it came; nil, and
// the leader gone, when none waits.
func (q *waitQueue[T]) take(n int) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.leaders--
		return nil
	}
	n = min(len(q.waiting), n)
	taken := slices.Clone(q.waiting[:n])
	q.waiting = slices.Delete(q.waiting, 0, n)
	return taken
}

// grouper collects the saves waiting for a group; its leaders are the
// groups being written.
type grouper struct{ waitQueue[*groupSave] }

// groupSave is one save waiting for, or written in, a group.
type groupSave struct {
	ctx  context.Context
	key  string
	fn   func(tx sqlstore.Conn) error
	err  error
	done chan struct{}
}

// InGroupTx implements [sqlstore.GroupCommitter].
func (d *poolDB) InGroupTx(ctx context.Context, key string, fn func(tx sqlstore.Conn) error) error {
	g := &d.group
	save := &groupSave{ctx: ctx, key: key, fn: fn, done: make(chan struct{})}
	g.mu.Lock()
	g.waiting = append(g.waiting, save)
	lead := g.leaders < maxGroups
	if lead {
		g.leaders++
	}
	g.mu.Unlock()
	if lead {
		g.lead(d, save)
	}
	<-save.done
	if errors.Is(save.err, errAlone) {
		return d.InTx(ctx, fn)
	}
	return save.err
}

// lead writes groups until none waits, or until own (when set) is written
// and others wait: a goroutine then leads in its place, so a save's caller
// never leads longer than it takes to write its own save's group.
func (g *grouper) lead(d *poolDB, own *groupSave) {
	for {
		group := g.take(maxGroupSize)
		if group == nil {
			return
		}
		writeGroup(d, group)
		if own != nil && written(own) {
			go g.lead(d, nil)
			return
		}
	}
}

// written reports whether a save's group has ended.
func written(s *groupSave) bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// writeGroup writes one group on d and tells each save how it ended.
func writeGroup(d *poolDB, group []*groupSave) {
	// Stable: the saves of one session keep the order they came in.
	slices.SortStableFunc(group, func(a, b *groupSave) int { return cmp.Compare(a.key, b.key) })
	ctx, cancel := context.WithTimeout(context.Background(), groupCommitTimeout)
	defer cancel()
	// end tells every save of the group not told yet, those after a
	// failed one included, that it ended with err. Only this goroutine
	// closes a group's done channels.
	end := func(err error) {
		for _, s := range group {
			if !written(s) {
				s.err = err
				close(s.done)
			}
		}
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		end(errAlone) // each save meets the pool's error itself
		return
	}
	defer conn.Release()
	tx := &lazyTx{conn: conn.Conn(), binds: d.binds}
	for _, s := range group {
		if err := s.ctx.Err(); err != nil {
			s.err = err
			close(s.done)
			continue
		}
		if err := s.fn(tx); err != nil {
			tx.rollback(ctx)
			end(errAlone)
			return
		}
	}
	err = tx.commit(ctx)
	if err != nil && !storage.Transient(err) {
		// A held statement of one save failed the COMMIT: each runs alone.
		end(errAlone)
		return
	}
	end(err)
}
