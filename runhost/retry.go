package runhost

import (
	"context"
	"errors"
	"time"

	"github.com/agnogo/agnogo/storage"
)

// The delays between tries of a save or a read the database refused for a
// transient reason.
const (
	storeRetryFirst = 100 * time.Millisecond
	storeRetryMax   = 5 * time.Second
)

// Read runs read, a read of the store a run cannot start or go on without
// (its session, its history, the run a continuation reopens), again after
// a transient failure of the database ([storage.Transient]: a restart, a
// dropped connection, a busy SQLite file) with the doubling delay of a
// save, for up to Config.SaveRetry or until ctx ends. Every failed try is
// logged with what was read ("session", "history", …) and the id of what
// it was read for; nothing is built for the log unless a try fails.
//
// A run that starts while its database restarts so waits for it instead
// of failing; and a run the durable queue executes again after a crash
// reads what the execution before it read, so it calls the same steps in
// the same order, which replaying its journal requires.
func Read[T any](ctx context.Context, h *Host, what, id string, read func(context.Context) (T, error)) (T, error) {
	var out T
	err := h.retrying(ctx, func() error {
		var err error
		out, err = read(ctx)
		return err
	}, func(delay time.Duration, err error) {
		h.cfg.Logger.WarnContext(ctx, "reading from the store failed; trying again", "read", what, "id", id, "retry_in", delay, "error", err)
	})
	return out, err
}

// retrying runs try again after a transient failure of the database, as
// [Read] describes, calling logRetry before each wait.
func (h *Host) retrying(ctx context.Context, try func() error, logRetry func(delay time.Duration, err error)) error {
	cfg := h.cfg
	deadline := cfg.Now().Add(cfg.SaveRetry)
	delay := storeRetryFirst
	for {
		err := try()
		if err == nil || !storage.Transient(err) || ctx.Err() != nil || !cfg.Now().Add(delay).Before(deadline) {
			return err
		}
		logRetry(delay, err)
		if err := cfg.Sleep(ctx, delay); err != nil {
			return errors.Join(err, ctx.Err())
		}
		delay = min(2*delay, storeRetryMax)
	}
}
