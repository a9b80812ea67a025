// Package barriermodel is a model test double for concurrency: each call
// waits until a set number of calls are in flight at once, then answers.
// A test whose members' models stand at one barrier can pass only if the
// members run at the same time; a barrier set higher than the calls that
// come keeps them waiting until their runs are cancelled.
package barriermodel

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/agnogo/agnogo/model"
)

// bound keeps a failing test (calls that come one at a time) from hanging:
// a call still waiting after it fails, saying why.
const bound = 30 * time.Second

// Barrier releases its calls once n of them have arrived. Create it with
// [New].
type Barrier struct {
	n        int
	all      chan struct{}
	arrivals chan struct{}

	mu      sync.Mutex
	arrived int
}

// New returns a barrier for n calls.
func New(n int) *Barrier {
	return &Barrier{n: n, all: make(chan struct{}), arrivals: make(chan struct{}, 1024)}
}

// Arrivals receives once per call that reached the barrier.
func (b *Barrier) Arrivals() <-chan struct{} { return b.arrivals }

// Model is a model at the barrier answering answer.
func (b *Barrier) Model(answer string) model.Model { return &barrierModel{b: b, answer: answer} }

// arrive records a call and waits for the others, or for ctx.
func (b *Barrier) arrive(ctx context.Context) error {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	b.arrivals <- struct{}{}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return errors.New("barriermodel: the other calls never came: they ran one at a time")
	}
}

type barrierModel struct {
	b      *Barrier
	answer string
}

// Info implements model.Model.
func (m *barrierModel) Info() model.Info { return model.Info{ID: "barrier", Provider: "Test"} }

// Invoke implements model.Model.
func (m *barrierModel) Invoke(ctx context.Context, _ *model.Request) (*model.Response, error) {
	if err := m.b.arrive(ctx); err != nil {
		return nil, err
	}
	return &model.Response{Content: m.answer, StopReason: "stop"}, nil
}

// Stream implements model.Model: the whole answer as one final chunk.
func (m *barrierModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		resp, err := m.Invoke(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		yield(&model.Chunk{Response: resp}, nil)
	}
}
