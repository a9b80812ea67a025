// Package sqlstore is the SQL implementation of [storage.Store] shared by the
// SQLite and Postgres adapters.
//
// The two databases agree on almost everything agnogo needs — ON CONFLICT
// upserts, RETURNING, window-free paging — so the queries are written once, with
// `?` placeholders, and the few differences (JSON operators, row locks, DDL
// types, how a table's existence is probed) live in [Dialect]. Each adapter
// supplies a [DB]: the SQLite adapter routes writes through one connection and
// reads through a pool; the Postgres adapter uses a pgx pool and rewrites
// placeholders to $n.
package sqlstore
