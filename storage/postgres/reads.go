package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// Batched reads. The one-row reads the store batches (the version check
// every turn of a conversation makes before it runs) that arrive while
// another batch is on the wire wait, then go together: one message to the
// server with every read's statement and one answer back, on one
// connection, instead of a round trip each. A read on an idle server goes
// out at once, as it would alone. Each statement still runs on its own
// snapshot, as one sent alone does.
//
// A read whose statement failed in a batch runs again alone, on its
// caller's context: the server skips what follows a failed statement of a
// batch, and a read must never fail with another's error.

// The bounds of batched reads.
const (
	// maxReadBatches is how many batches are on the wire at once, each on
	// its own connection; the pool's other connections serve the group
	// commits and every other statement.
	maxReadBatches = 2
	// maxReadBatch bounds the reads of one batch.
	maxReadBatch = 64
	// readBatchTimeout bounds a batch, which no one read's context may
	// cut short; a caller whose context ends stops waiting for it.
	readBatchTimeout = 30 * time.Second
)

// errReadAlone tells a read that it must run alone.
var errReadAlone = errors.New("postgres: the read runs alone")

// readBatcher collects the reads waiting for a batch; its leaders are the
// lone reads and the batches on the wire.
type readBatcher struct{ waitQueue[*batchedRead] }

// batchedRead is one read waiting for, or sent in, a batch.
type batchedRead struct {
	read sqlstore.Pipelined
	// mu is held while the batch scans the read's row, and left is set
	// under it when the caller stops waiting: its row is then not
	// scanned, so nothing writes to what the caller scans into once it
	// has returned.
	mu   sync.Mutex
	left bool
	err  error
	done chan struct{}
}

// QueryRowBatched implements [sqlstore.ReadBatcher].
func (d *poolDB) QueryRowBatched(ctx context.Context, read sqlstore.Pipelined) error {
	b := &d.reads
	b.mu.Lock()
	if b.leaders < maxReadBatches {
		// A batch of one, on its caller's context: no read waits while a
		// leader is free, as a leader leaves only once none waits. Reads
		// that arrive while it is on the wire wait for it.
		b.leaders++
		b.mu.Unlock()
		err := d.readAlone(ctx, read)
		b.handOff(d)
		return err
	}
	r := &batchedRead{read: read, done: make(chan struct{})}
	b.waiting = append(b.waiting, r)
	b.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		r.mu.Lock()
		select {
		case <-r.done:
		default:
			r.left = true
		}
		r.mu.Unlock()
		if r.left {
			return ctx.Err()
		}
	}
	if errors.Is(r.err, errReadAlone) {
		return d.readAlone(ctx, read)
	}
	return r.err
}

// readAlone sends read as a query of its own, on its caller's context.
func (d *poolDB) readAlone(ctx context.Context, read sqlstore.Pipelined) error {
	return read.Scan(d.Reader().QueryRow(ctx, read.Query, read.Args...))
}

// handOff ends a leader's read: when reads wait, a goroutine takes the
// leader's place and sends them; else the leader is gone.
func (b *readBatcher) handOff(d *poolDB) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiting) == 0 {
		b.leaders--
		return
	}
	go b.lead(d)
}

// lead sends the waiting reads in batches until none waits.
func (b *readBatcher) lead(d *poolDB) {
	for {
		batch := b.take(maxReadBatch)
		if batch == nil {
			return
		}
		sendReads(d, batch)
	}
}

// sendReads sends one batch on d and hands each read its row, or tells it
// to run alone.
func sendReads(d *poolDB, batch []*batchedRead) {
	ctx, cancel := context.WithTimeout(context.Background(), readBatchTimeout)
	defer cancel()
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		for _, r := range batch {
			r.err = errReadAlone // each meets the pool's error itself
		}
		return
	}
	defer conn.Release()
	next := func() pgx.Row { // a lone read goes as a query of its own
		r := batch[0]
		return conn.QueryRow(ctx, d.binds.rebind(r.read.Query), r.read.Args...)
	}
	if len(batch) > 1 {
		queued := &pgx.Batch{}
		for _, r := range batch {
			queued.Queue(d.binds.rebind(r.read.Query), r.read.Args...)
		}
		results := conn.SendBatch(ctx, queued)
		defer results.Close() // a failed statement has sent its read alone
		next = results.QueryRow
	}
	for _, r := range batch {
		row := pgRow{next()}
		r.mu.Lock()
		if r.left {
			_ = row.Scan() // read past it; no one waits for it
		} else if err := r.read.Scan(row); err != nil && !errors.Is(err, sqlstore.ErrNoRows) {
			r.err = errReadAlone
		} else {
			r.err = err
		}
		r.mu.Unlock()
	}
}
