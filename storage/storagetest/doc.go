// Package storagetest is the conformance suite every [storage.Store] adapter
// passes. It pins down the behaviour callers rely on but the interfaces cannot
// express: run_index assignment, listing filters and totals, cascading deletes,
// transcript numbering, concurrency, and above all user isolation — a scoped
// call never reads, overwrites or deletes another user's rows.
//
// An adapter runs the whole suite from one test, handing it a constructor for
// fresh, empty stores:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Store {
//			store, err := sqlite.Open(t.Context(), sqlite.Config{
//				Path: filepath.Join(t.TempDir(), "agno.db"),
//			})
//			require.NoError(t, err)
//			t.Cleanup(func() { require.NoError(t, store.Close()) })
//			return store
//		})
//	}
//
// [Run] calls the constructor once per subtest, and the subtests run in
// parallel, so every store must be independent of the others: a new database
// file for SQLite, a new schema (see internal/testdb.UniqueName) for Postgres.
// The constructor registers its own cleanup with t.Cleanup.
//
// [RunReplicas] runs the races that need two processes — a schedule's fire
// consumed once, a schedule run leased to one scheduler — with two stores
// opened independently over one database.
//
// The suite never sleeps and never compares timestamps with the wall clock, so
// it also passes against a store built with a fake clock. Where it needs
// distinct created_at values it sets CreatedAt explicitly.
//
// Run a single subtest with the usual -run pattern, for example
// go test ./storage/sqlite -run 'TestConformance/Isolation/Runs'.
package storagetest
