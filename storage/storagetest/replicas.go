package storagetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

// RunReplicas runs the conformance subtests that need two stores over one
// database, as two replicas (two processes) would open it: a fire consumed
// once, and a run leased to one scheduler only, whichever replica asks.
// newReplicas returns two independently opened stores over one fresh, empty
// database (two pools on one SQLite file, two pools on one Postgres schema)
// and registers their cleanup with t.Cleanup; the subtests run in parallel.
func RunReplicas(t *testing.T, newReplicas func(t *testing.T) (storage.Store, storage.Store)) {
	t.Helper()
	tests := []struct {
		name string
		race func(t *testing.T, stores []storage.Store)
	}{
		{"FireExactlyOnce", fireRace},
		{"ClaimNeverTwice", claimRace},
		{"VersionSeesTheOtherReplica", versionAcrossReplicas},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			first, second := newReplicas(t)
			require.NotNil(t, first, "newReplicas returned a nil store")
			require.NotNil(t, second, "newReplicas returned a nil store")
			test.race(t, []storage.Store{first, second})
		})
	}
}
