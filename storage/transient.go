package storage

import (
	"context"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"syscall"
)

// Transient reports whether err is a failure of the database that the same
// write may not meet a moment later: the connection was refused, reset or
// dropped, the server is shutting down or restarting, it has too many
// connections, or a transaction lost a serialization race or a deadlock;
// for SQLite, the database was busy or locked. A cancelled or expired
// context is not transient (the caller gave up), nor is anything the
// database refused for what was asked (a constraint, a syntax error,
// ErrNotFound, ErrInvalid).
//
// It reads the errors of both drivers through the methods they expose
// (Postgres errors' SQLSTATE, SQLite errors' result code) rather than their
// types, so it needs neither driver.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid) {
		return false
	}
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return transientSQLState(pg.SQLState())
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) && fromSQLite(lite) {
		switch lite.Code() & 0xff {
		case sqliteBusy, sqliteLocked:
			return true
		}
		return false
	}
	var retry interface{ SafeToRetry() bool }
	if errors.As(err, &retry) && retry.SafeToRetry() {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if connClosed(err) {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// The SQLite primary result codes of a database another connection holds.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

// fromSQLite reports whether an error with a result code is the SQLite
// driver's (modernc.org/sqlite), whose codes are SQLite's result codes.
func fromSQLite(err any) bool {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == "modernc.org/sqlite" || strings.HasPrefix(t.PkgPath(), "modernc.org/sqlite/")
}

// transientSQLState reports whether a Postgres SQLSTATE names a failure the
// same statement may not meet again.
func transientSQLState(state string) bool {
	switch {
	case strings.HasPrefix(state, "08"): // connection exception
		return true
	case strings.HasPrefix(state, "53"): // insufficient resources: too many connections, out of memory, disk full
		return state == "53300" || state == "53200"
	}
	switch state {
	case "57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now
		"40001", // serialization_failure
		"40P01", // deadlock_detected
		"55P03": // lock_not_available
		return true
	}
	return false
}

// connClosed reports the Postgres driver's error for a connection that was
// closed under a statement (pgconn.ErrConnClosed, "conn closed"). The driver
// calls it unsafe to retry because the statement may have run; the store's
// writes are upserts, so running one again is safe, and the same write on a
// new connection may well succeed. It is matched by its text, down the
// chain, so that this package needs no driver.
func connClosed(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "conn closed" {
			return true
		}
	}
	return false
}
