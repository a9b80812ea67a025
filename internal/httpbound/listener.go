package httpbound

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// LimitListener returns a listener that keeps at most n of l's connections
// open at once: while n are, Accept waits until one of them is closed (or
// the listener is). With n below 1 there is no cap: l is returned.
func LimitListener(l net.Listener, n int) net.Listener {
	if n < 1 {
		return l
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

// limitListener is the listener [LimitListener] returns.
type limitListener struct {
	net.Listener
	slots     chan struct{} // one token per open connection
	closed    chan struct{}
	closeOnce sync.Once

	// full, when set, is called each time Accept finds every slot taken
	// and starts to wait: a signal for tests.
	full func()
}

// Accept waits for a free slot, then accepts a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if l.full != nil {
			l.full()
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	conn, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: conn, listener: l}, nil
}

// Close closes the listener and ends the waits of Accept.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitedConn frees its slot when it is closed.
type limitedConn struct {
	net.Conn
	listener    *limitListener
	releaseOnce sync.Once
}

// Close closes the connection and frees its slot.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.releaseOnce.Do(func() { <-c.listener.slots })
	return err
}

// CloseWrite ends the writing side of the connection, as the server does
// to end a response gracefully before it closes a connection.
func (c *limitedConn) CloseWrite() error {
	if conn, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return conn.CloseWrite()
	}
	return fmt.Errorf("close the writing side of a %T: %w", c.Conn, errors.ErrUnsupported)
}
