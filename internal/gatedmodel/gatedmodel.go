// Package gatedmodel is a model test double that streams the start of its
// reply, "Hel" and "lo, ", then waits inside the same model call until
// opened before finishing "Hello, world": tests use it to act while a step
// is in flight (cancel it, follow it from another replica, crash).
package gatedmodel

import (
	"context"
	"iter"
	"sync"

	"github.com/agnogo/agnogo/model"
)

// Model is the gated model. Create it with [New].
type Model struct {
	streamed chan struct{}
	gate     chan struct{}
	once     sync.Once
	shut     sync.Once
}

// New returns a closed gate.
func New() *Model { return &Model{streamed: make(chan struct{}), gate: make(chan struct{})} }

// Streamed is closed once a call has streamed the start of its reply and
// waits at the gate.
func (m *Model) Streamed() <-chan struct{} { return m.streamed }

// Open lets every call, waiting or to come, finish. Opening twice is
// harmless.
func (m *Model) Open() { m.shut.Do(func() { close(m.gate) }) }

// Info implements model.Model.
func (m *Model) Info() model.Info { return model.Info{ID: "gated", Provider: "Test"} }

// Invoke implements model.Model: the whole reply, ungated.
func (m *Model) Invoke(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{Content: "Hello, world", StopReason: "stop"}, nil
}

// Stream implements model.Model.
func (m *Model) Stream(ctx context.Context, _ *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		for _, delta := range []string{"Hel", "lo, "} {
			if !yield(&model.Chunk{ContentDelta: delta}, nil) {
				return
			}
		}
		m.once.Do(func() { close(m.streamed) })
		select {
		case <-m.gate:
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
		if yield(&model.Chunk{ContentDelta: "world"}, nil) {
			yield(&model.Chunk{Response: &model.Response{Content: "Hello, world", StopReason: "stop"}}, nil)
		}
	}
}
