//go:build linux

package residency

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// written is a variable of the executable's writable data, changed before
// the release: the release must leave it as the program set it.
var written = [4]int64{1, 2, 3, 4}

// TestReleaseDropsTheExecutablesPages: the process's file-backed resident
// set shrinks, and what the program wrote stays as written.
func TestReleaseDropsTheExecutablesPages(t *testing.T) {
	written[2] = 42
	before := FileResident()
	require.Positive(t, before, "RssFile is read from /proc/self/status")
	released, err := Release()
	require.NoError(t, err)
	after := FileResident()
	require.GreaterOrEqual(t, released.Mappings, 1, "the executable's code is a read-only mapping")
	require.Positive(t, released.Bytes)
	require.Less(t, after, before, "file-backed resident memory: %d bytes before, %d after", before, after)
	require.Less(t, released.ResidentAfter, released.ResidentBefore, "the release reports what it released")
	require.Equal(t, [4]int64{1, 2, 42, 4}, written, "writable data is kept")
}

func TestReadOnlyPrivate(t *testing.T) {
	for perms, want := range map[string]bool{"r-xp": true, "r--p": true, "rw-p": false, "r-xs": false, "---p": false, "rwxp": false} {
		require.Equal(t, want, readOnlyPrivate(perms), perms)
	}
}
