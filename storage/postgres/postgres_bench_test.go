package postgres

import (
	"testing"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/storagetest"
)

func openBench(b *testing.B) storage.Store {
	store, _ := openTemp(b)
	return store
}

func BenchmarkUpsertRun(b *testing.B) { storagetest.BenchmarkUpsertRun(b, openBench) }

func BenchmarkConversation(b *testing.B) { storagetest.BenchmarkConversation(b, openBench) }

func BenchmarkSessionVersion(b *testing.B) { storagetest.BenchmarkSessionVersion(b, openBench) }

func BenchmarkTurnSave(b *testing.B) { storagetest.BenchmarkTurnSave(b, openBench) }

func BenchmarkForkSession(b *testing.B) { storagetest.BenchmarkForkSession(b, openBench) }

func BenchmarkWriteTraces(b *testing.B) { storagetest.BenchmarkWriteTraces(b, openBench) }
