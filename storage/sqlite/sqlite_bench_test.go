package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/storage/storagetest"
)

func openBench(b *testing.B) storage.Store {
	store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return store
}

func BenchmarkUpsertRun(b *testing.B) { storagetest.BenchmarkUpsertRun(b, openBench) }

func BenchmarkConversation(b *testing.B) { storagetest.BenchmarkConversation(b, openBench) }

func BenchmarkSessionVersion(b *testing.B) { storagetest.BenchmarkSessionVersion(b, openBench) }

func BenchmarkTurnSave(b *testing.B) { storagetest.BenchmarkTurnSave(b, openBench) }

func BenchmarkForkSession(b *testing.B) { storagetest.BenchmarkForkSession(b, openBench) }

func BenchmarkWriteTraces(b *testing.B) { storagetest.BenchmarkWriteTraces(b, openBench) }
