// Package sqlite is the embedded [storage.Store]: SQLite through the cgo-free
// modernc.org/sqlite driver.
//
// The database runs in WAL mode with foreign keys on and a busy timeout.
// Writes go through one connection, so the API, the queue worker and the
// scheduler of one process wait their turn instead of failing with
// "database is locked"; reads use a separate pool and never wait for writers.
//
//	store, err := sqlite.Open(ctx, sqlite.Config{Path: "agnogo.db"})
//
// A new file is created in the current schema. A file written by an older
// agnogo or by Agno is refused with an error naming `agnogo migrate`, unless
// Config.AutoMigrate is set.
package sqlite
