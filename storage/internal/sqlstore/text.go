package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agnogo/agnogo/storage"
)

// Text a database cannot store never reaches a statement. A text argument
// holding a NUL character or bytes that are not UTF-8 (an id, a name, a
// search) is refused with storage.ErrInvalidText on both databases, so the
// Go API behaves the same on SQLite as on Postgres, which refuses such text
// with an error that would otherwise surface as a failure of the store.
// Documents the store encodes (runs, session data, memories) are content a
// model or a tool produced: a NUL in them is kept as U+FFFD rather than
// losing the run (see storableJSON), and so is one in the content of an
// offloaded tool result or a CLI's transcript (storableText). Whatever slips past both — a NUL
// escape in a JSON document built elsewhere — is mapped from Postgres's
// SQLSTATE to the same error.

// checkedDB refuses text a database cannot store in every statement's
// arguments, and maps the database's own refusal to storage.ErrInvalidText.
type checkedDB struct{ DB }

func (d checkedDB) Reader() Conn { return checkedConn{d.DB.Reader()} }

func (d checkedDB) InTx(ctx context.Context, fn func(tx Conn) error) error {
	return invalidText(d.DB.InTx(ctx, func(tx Conn) error { return fn(checkedConn{tx}) }))
}

// inGroupTx runs fn as [GroupCommitter.InGroupTx] does, under key, when
// the database groups writes and key is set; else in a transaction of its
// own.
func (d checkedDB) inGroupTx(ctx context.Context, key string, fn func(tx Conn) error) error {
	g, ok := d.DB.(GroupCommitter)
	if !ok || key == "" {
		return d.InTx(ctx, fn)
	}
	return invalidText(g.InGroupTx(ctx, key, func(tx Conn) error { return fn(checkedConn{tx}) }))
}

// queryRowBatched runs a one-row read and hands its row to scan: sent with
// concurrent reads when the database batches them ([ReadBatcher]), on the
// idle writer's warm connection when it has one ([WarmReader]), alone on
// a reader otherwise.
func (d checkedDB) queryRowBatched(ctx context.Context, scan func(Row) error, query string, args ...any) error {
	if err := checkArgs(args); err != nil {
		return err
	}
	checked := func(row Row) error { return scan(checkedRow{row}) }
	if w, ok := d.DB.(WarmReader); ok {
		if ran, err := w.QueryRowWarm(ctx, checked, query, args...); ran {
			return invalidText(err)
		}
	}
	if b, ok := d.DB.(ReadBatcher); ok {
		return invalidText(b.QueryRowBatched(ctx, Pipelined{Query: query, Args: args, Scan: checked}))
	}
	return checked(d.DB.Reader().QueryRow(ctx, query, args...)) // checked above
}

// checkedConn is a connection of a checkedDB.
type checkedConn struct{ Conn }

func (c checkedConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if err := checkArgs(args); err != nil {
		return 0, err
	}
	n, err := c.Conn.Exec(ctx, query, args...)
	return n, invalidText(err)
}

func (c checkedConn) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	if err := checkArgs(args); err != nil {
		return nil, err
	}
	rows, err := c.Conn.Query(ctx, query, args...)
	return rows, invalidText(err)
}

func (c checkedConn) QueryRow(ctx context.Context, query string, args ...any) Row {
	if err := checkArgs(args); err != nil {
		return errRow{err}
	}
	return checkedRow{c.Conn.QueryRow(ctx, query, args...)}
}

// checkedRow maps the database's refusal of text when the row is scanned.
type checkedRow struct{ Row }

func (r checkedRow) Scan(dest ...any) error { return invalidText(r.Row.Scan(dest...)) }

// errRow is a row whose query was refused before it ran.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// checkArgs refuses a text argument a database cannot store.
func checkArgs(args []any) error {
	for i, arg := range args {
		var text string
		switch v := arg.(type) {
		case string:
			text = v
		case *string:
			if v == nil {
				continue
			}
			text = *v
		default:
			continue
		}
		if strings.IndexByte(text, 0) >= 0 {
			return fmt.Errorf("%w: argument %d contains a NUL character", storage.ErrInvalidText, i+1)
		}
		if !utf8.ValidString(text) {
			return fmt.Errorf("%w: argument %d is not valid UTF-8", storage.ErrInvalidText, i+1)
		}
	}
	return nil
}

// invalidText maps a database's refusal of a character (Postgres SQLSTATE
// 22021, character not in repertoire, and 22P05, untranslatable character:
// the NUL escape in jsonb) to storage.ErrInvalidText.
func invalidText(err error) error {
	var coded interface{ SQLState() string }
	if err != nil && !errors.Is(err, storage.ErrInvalidText) && errors.As(err, &coded) {
		if code := coded.SQLState(); code == "22021" || code == "22P05" {
			return fmt.Errorf("%w: %w", storage.ErrInvalidText, err)
		}
	}
	return err
}

// encodeJSON encodes a document the store writes, storable (see
// storableJSON).
func encodeJSON(v any) ([]byte, error) {
	doc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return storableJSON(doc), nil
}

// nulEscape is a NUL character as encoding/json writes it.
var nulEscape = []byte(`\u0000`)

// storableJSON replaces every NUL character of an encoded document (the
// escape \u0000; a raw NUL is not valid JSON) by U+FFFD, the replacement
// character, as encoding/json already does for bytes that are not UTF-8:
// Postgres's jsonb cannot hold it, and a run whose tool read a binary file
// is stored rather than lost. An escaped backslash followed by "u0000" is
// text, and kept.
func storableJSON(doc []byte) []byte {
	if !bytes.Contains(doc, nulEscape) {
		return doc
	}
	out := make([]byte, 0, len(doc))
	for i := 0; i < len(doc); i++ {
		if doc[i] != '\\' {
			out = append(out, doc[i])
			continue
		}
		if bytes.HasPrefix(doc[i:], nulEscape) {
			out = append(out, `\ufffd`...)
			i += len(nulEscape) - 1
			continue
		}
		// Another escape: copied whole, so its escaped character is
		// never read as the start of one.
		out = append(out, doc[i])
		if i+1 < len(doc) {
			i++
			out = append(out, doc[i])
		}
	}
	return out
}

// storableText is content a tool or a CLI produced, storable: each NUL
// character and each byte that is not UTF-8 becomes U+FFFD.
func storableText(text string) string {
	if strings.IndexByte(text, 0) < 0 && utf8.ValidString(text) {
		return text
	}
	return strings.ReplaceAll(strings.ToValidUTF8(text, "\uFFFD"), "\x00", "\uFFFD")
}
