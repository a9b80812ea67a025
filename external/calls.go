package external

import (
	"context"
	"errors"
	"iter"
	"sync"
)

// ErrCallsClosed: a call's answer will never come, because the child that
// should answer it has exited. A driver reports the child's own exit error
// instead.
var ErrCallsClosed = errors.New("the child exited before answering")

// Calls matches the requests a driver sends a child process (claude's
// control requests, codex's JSON-RPC calls) with the answers the child
// sends back, by id. The zero value is ready to use; it is safe for
// concurrent use.
type Calls[T any] struct {
	mu      sync.Mutex
	next    int64
	pending map[int64]chan T
	closed  bool
}

// Do runs one call: send writes the request under a fresh id, and Do waits
// for its answer. It fails with send's error, with ctx's error when ctx
// ends first, or with [ErrCallsClosed] when the child exits first.
func (c *Calls[T]) Do(ctx context.Context, send func(id int64) error) (T, error) {
	var zero T
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return zero, ErrCallsClosed
	}
	if c.pending == nil {
		c.pending = map[int64]chan T{}
	}
	c.next++
	id, ch := c.next, make(chan T, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	if err := send(id); err != nil {
		c.forget(id)
		return zero, err
	}
	select {
	case <-ctx.Done():
		c.forget(id)
		return zero, ctx.Err()
	case answer, ok := <-ch:
		if !ok {
			return zero, ErrCallsClosed
		}
		return answer, nil
	}
}

// Answer hands call id its answer; it reports whether a call awaited it.
func (c *Calls[T]) Answer(id int64, answer T) bool {
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		ch <- answer
	}
	return ok
}

// Close fails the calls awaited now and any made later: the child exited.
func (c *Calls[T]) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

// forget drops a call nobody awaits any more.
func (c *Calls[T]) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Follow yields what a child sends on ch — its lines or messages — until
// one for which stop reports true (yielded too), ctx ends (then ctx's
// error), or ch closes because the child exited (then exited's error).
func Follow[T any](ctx context.Context, ch <-chan T, exited func() error, stop func(T) bool) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		for {
			select {
			case <-ctx.Done():
				yield(zero, ctx.Err())
				return
			case v, ok := <-ch:
				if !ok {
					yield(zero, exited())
					return
				}
				if !yield(v, nil) || (stop != nil && stop(v)) {
					return
				}
			}
		}
	}
}
