package openai_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/model"
)

// promptly bounds how long cancelling may take to stop a call.
const promptly = 5 * time.Second

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			b := setup(t, api)
			b.srv.Enqueue(fakeopenai.Text("one two three four five").StallAfter(2))

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan streamResult, 1)
			stalled := make(chan struct{}) // closed once the deltas before the stall are in
			go func() {
				var result streamResult
				for chunk, err := range b.model.Stream(ctx, userRequest("count")) {
					if err != nil {
						result.err = err
						break
					}
					result.deltas++
					result.content += chunk.ContentDelta
					if result.deltas == 2 {
						close(stalled)
					}
					if chunk.Response != nil {
						result.response = chunk.Response
					}
				}
				done <- result
			}()

			select {
			case <-stalled:
			case result := <-done:
				t.Fatalf("the stream ended before the stall: %+v", result)
			case <-time.After(promptly):
				t.Fatal("the deltas before the stall did not arrive")
			}
			cancel()
			select {
			case result := <-done:
				require.ErrorIs(t, result.err, context.Canceled)
				require.False(t, model.IsRetryable(result.err), "a cancelled call is not retried")
				require.Nil(t, result.response)
				require.Equal(t, "one two ", result.content, "the deltas sent before the stall")
			case <-time.After(promptly):
				t.Fatal("the stream did not stop after ctx was cancelled")
			}
			require.Eventually(t, func() bool { return b.srv.Disconnects() == 1 }, promptly, 10*time.Millisecond,
				"the server saw the client go away")
		})
	}
}

func TestBreakingTheStreamClosesIt(t *testing.T) {
	t.Parallel()
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			b := setup(t, api)
			b.srv.Enqueue(fakeopenai.Text("one two three four five").StallAfter(2), fakeopenai.Text("next"))

			for chunk, err := range b.model.Stream(t.Context(), userRequest("count")) {
				require.NoError(t, err)
				require.Equal(t, "one ", chunk.ContentDelta)
				break
			}
			require.Eventually(t, func() bool { return b.srv.Disconnects() == 1 }, promptly, 10*time.Millisecond,
				"breaking the range closed the HTTP stream")

			resp, err := b.model.Invoke(t.Context(), userRequest("again"))
			require.NoError(t, err, "the model is usable afterwards")
			require.Equal(t, "next", resp.Content)
		})
	}
}

func TestDeadlineBeforeAnswer(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		b := setup(t, api)
		b.srv.Enqueue(fakeopenai.Text("too late").StallAfter(0))

		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		started := time.Now()
		var err error
		if stream {
			err = collect(ctx, b.model, userRequest("hi")).err
		} else {
			_, err = b.model.Invoke(ctx, userRequest("hi"))
		}
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(started), promptly)
		var modelErr *model.Error
		require.False(t, errors.As(err, &modelErr), "the caller's deadline is not a provider failure")
	})
}

func TestCutStreamIsAConnectionError(t *testing.T) {
	t.Parallel()
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			b := setup(t, api)
			b.srv.Enqueue(fakeopenai.RawError(200, "")) // a 200 stream with no events at all

			result := collect(t.Context(), b.model, userRequest("hi"))
			require.Nil(t, result.response)
			require.Equal(t, model.ClassConnection, model.ClassOf(result.err), "%v", result.err)
			require.True(t, model.IsRetryable(result.err))
		})
	}
}

func TestDroppedConnectionIsAConnectionError(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		b := setup(t, api)
		b.srv.Enqueue(fakeopenai.Text("one two three four five").CutAfter(2))

		_, err := call(t, b.model, stream, userRequest("hi"))
		require.Error(t, err)
		require.Equal(t, model.ClassConnection, model.ClassOf(err), "%v", err)
		require.True(t, model.IsRetryable(err))
	})
}
