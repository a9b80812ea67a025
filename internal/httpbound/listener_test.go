package httpbound

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLimitListener: with two connections open, a third waits to be
// accepted until one of them closes; closing the listener ends the wait.
func TestLimitListener(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := LimitListener(inner, 2).(*limitListener)
	full := make(chan struct{}, 4)
	l.full = func() { full <- struct{}{} }
	t.Cleanup(func() { l.Close() })

	accepted := make(chan net.Conn)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			accepted <- conn
		}
	}()
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	receive := func() net.Conn {
		select {
		case conn := <-accepted:
			return conn
		case <-time.After(time.Minute):
			t.Fatal("no connection accepted")
			return nil
		}
	}

	dial()
	first := receive()
	second := dial()
	receive()
	third := dial() // connected by the kernel, not accepted
	select {
	case <-full:
	case <-time.After(time.Minute):
		t.Fatal("Accept did not wait with both slots taken")
	}
	select {
	case conn := <-accepted:
		t.Fatalf("a third connection was accepted: %v", conn.RemoteAddr())
	default:
	}

	require.NoError(t, first.Close())
	require.Error(t, first.Close(), "closing twice frees one slot (checked below)")
	got := receive()
	require.Equal(t, third.LocalAddr().String(), got.RemoteAddr().String(), "the waiting connection is the one accepted")
	_, err = third.Write([]byte("!"))
	require.NoError(t, err)
	buf := make([]byte, 1)
	_, err = io.ReadFull(got, buf)
	require.NoError(t, err)
	require.Equal(t, "!", string(buf))

	select {
	case <-full: // the accept loop waits again: two slots taken
	case <-time.After(time.Minute):
		t.Fatal("Accept did not wait with both slots taken again")
	}
	require.NoError(t, l.Close())
	select {
	case err := <-acceptErr:
		require.True(t, errors.Is(err, net.ErrClosed), "%v", err)
	case <-time.After(time.Minute):
		t.Fatal("closing the listener did not end the wait")
	}
	_ = second
}

func TestLimitListenerWithoutCap(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { inner.Close() })
	require.Same(t, inner, LimitListener(inner, 0))
}
