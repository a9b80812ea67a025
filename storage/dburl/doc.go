// Package dburl opens an agnogo database from the URL a user types:
// `--db` on the command line or `db:` in the config file.
//
// Two forms are accepted:
//
//	sqlite://PATH                       a SQLite file; sqlite://./agnogo.db and
//	                                    sqlite://agnogo.db are relative to the
//	                                    working directory, sqlite:///var/lib/agnogo.db
//	                                    is absolute
//	postgres://user:pass@host:5432/db   a PostgreSQL database (postgresql:// too);
//	                                    the URL goes to pgx as written, so its
//	                                    query parameters (sslmode, pool_max_conns …)
//	                                    apply
//
// [Parse] checks a URL without touching the database; [Open] opens it with the
// adapter its scheme names and returns a [Store], which is both a storage.Store
// and a migrate.Driver, so one value serves the server and `agnogo migrate`.
//
// Importing this package links both drivers. A program that uses only one
// database can import storage/sqlite or storage/postgres directly.
package dburl
