package external_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
)

func TestCallsMatchAnswersToRequests(t *testing.T) {
	var calls external.Calls[string]
	sent := make(chan int64, 2)
	answer := make(chan string, 2)
	for range 2 {
		go func() {
			got, err := calls.Do(t.Context(), func(id int64) error { sent <- id; return nil })
			require.NoError(t, err)
			answer <- got
		}()
	}
	first, second := <-sent, <-sent
	require.NotEqual(t, first, second, "each call has its own id")
	require.True(t, calls.Answer(second, "two"))
	require.True(t, calls.Answer(first, "one"))
	require.ElementsMatch(t, []string{"one", "two"}, []string{<-answer, <-answer})
	require.False(t, calls.Answer(first, "again"), "an answered call awaits nothing more")

	refused := errors.New("write failed")
	_, err := calls.Do(t.Context(), func(int64) error { return refused })
	require.ErrorIs(t, err, refused)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	var late int64
	_, err = calls.Do(ctx, func(id int64) error { late = id; return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, calls.Answer(late, "too late"), "a call given up on is forgotten")

	waiting, asked := make(chan error, 1), make(chan struct{})
	go func() {
		_, err := calls.Do(t.Context(), func(int64) error { close(asked); return nil })
		waiting <- err
	}()
	<-asked // the request is sent: the call awaits its answer
	calls.Close()
	require.ErrorIs(t, <-waiting, external.ErrCallsClosed, "the child exited: an awaited call fails")
	_, err = calls.Do(t.Context(), func(int64) error { t.Fatal("no request after the child exited"); return nil })
	require.ErrorIs(t, err, external.ErrCallsClosed)
}
