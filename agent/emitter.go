package agent

import (
	"context"
	"time"

	"github.com/agnogo/agnogo/run"
)

// emitter hands a run's events to the consumer of a stream (if any) and keeps
// them for the stored run when store_events is on. When the consumer stops
// ranging, the run's context is cancelled so the loop winds down.
type emitter struct {
	yield   func(run.Event, error) bool
	cancel  context.CancelFunc
	now     func() time.Time
	keep    bool
	stopped bool
	out     *run.Output
}

// emit stamps e with the run's identity and delivers it. It reports whether
// the consumer still listens.
func (em *emitter) emit(e run.Event) bool {
	base := e.Base()
	base.CreatedAt = em.now().Unix()
	if em.out != nil {
		base.AgentID, base.AgentName = em.out.AgentID, em.out.AgentName
		base.RunID, base.SessionID = em.out.RunID, em.out.SessionID
		if em.keep {
			em.out.Events = append(em.out.Events, e)
		}
	}
	if em.yield == nil || em.stopped {
		return !em.stopped
	}
	if !em.yield(e, nil) {
		em.stopped = true
		em.cancel()
	}
	return !em.stopped
}

// active reports whether an event would go anywhere: to a consumer or onto
// the stored run. Building events nobody reads is skipped.
func (em *emitter) active() bool { return em.keep || em.streaming() }

// streaming reports whether someone consumes deltas.
func (em *emitter) streaming() bool { return em.yield != nil && !em.stopped }
