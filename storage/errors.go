package storage

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotFound reports that a row does not exist, or is not visible in the
// caller's user scope.
var ErrNotFound = errors.New("not found")

// ErrInvalid reports a request the store cannot carry out as given (a missing
// id, a bad page, an unknown sort column). Its message says what to fix.
var ErrInvalid = errors.New("invalid request")

// ErrInvalidText reports text a database cannot store: a NUL character
// (Postgres's text and jsonb refuse it) or bytes that are not UTF-8. Both
// stores refuse it, whatever the database, before it reaches a statement. It
// wraps [ErrInvalid]; servers answer it 422.
var ErrInvalidText = fmt.Errorf("%w: text a database cannot store (a NUL character, or bytes that are not UTF-8)", ErrInvalid)

// ErrMigrationRequired reports that the database schema is older than this
// build expects. Match it with errors.Is; the concrete error is a
// [*MigrationRequiredError].
var ErrMigrationRequired = errors.New("migration required")

// MigrationRequiredError lists the tables whose schema is behind and names the
// command that moves them forward.
type MigrationRequiredError struct {
	// Pending maps a table name to "stamped -> wanted" for each table that is behind.
	Pending []PendingTable
	// Command is the command line that migrates this database.
	Command string
}

// PendingTable is one table whose stamped schema version is older than the
// version this build writes.
type PendingTable struct {
	Table   string `json:"table"`
	Current string `json:"current"` // "" when the table does not exist yet
	Target  string `json:"target"`
}

// Error implements error.
func (e *MigrationRequiredError) Error() string {
	parts := make([]string, 0, len(e.Pending))
	for _, p := range e.Pending {
		current := p.Current
		if current == "" {
			current = "missing"
		}
		parts = append(parts, fmt.Sprintf("%s (%s -> %s)", p.Table, current, p.Target))
	}
	return fmt.Sprintf("database schema needs migrating: %s; run `%s`", strings.Join(parts, ", "), e.Command)
}

// Is makes errors.Is(err, ErrMigrationRequired) true.
func (e *MigrationRequiredError) Is(target error) bool { return target == ErrMigrationRequired }

// Invalidf returns an error wrapping [ErrInvalid] with a message that says what to fix.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// ErrConflict reports a write that lost to the row's current state: a name
// another row already holds, or a compare-and-set whose expected state has
// moved on (a schedule fired by another replica, an approval resolved
// already). Servers answer it 409.
var ErrConflict = errors.New("conflict")
