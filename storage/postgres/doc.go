// Package postgres is the [storage.Store] for deployments that outgrow one
// machine: PostgreSQL through a pgx/v5 connection pool.
//
// Tables live in their own schema, "ai" unless Config.Schema says otherwise,
// so agnogo can share a database with an application:
//
//	store, err := postgres.Open(ctx, postgres.Config{URL: "postgres://app@db:5432/app"})
//
// Concurrent writers on many replicas stay consistent: a run insert locks its
// session row while it takes the next run_index, and a transcript append takes
// an advisory lock on the transcript's key while it numbers entries.
package postgres
