//go:build linux

package residency

import (
	"bufio"
	"os"
	"strconv"
	"strings"
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
	before := rssFileKiB(t)
	released, err := Release()
	require.NoError(t, err)
	after := rssFileKiB(t)
	require.GreaterOrEqual(t, released.Mappings, 1, "the executable's code is a read-only mapping")
	require.Positive(t, released.Bytes)
	require.Less(t, after, before, "file-backed resident memory: %d KiB before, %d KiB after", before, after)
	require.Equal(t, [4]int64{1, 2, 42, 4}, written, "writable data is kept")
}

func TestReadOnlyPrivate(t *testing.T) {
	for perms, want := range map[string]bool{"r-xp": true, "r--p": true, "rw-p": false, "r-xs": false, "---p": false, "rwxp": false} {
		require.Equal(t, want, readOnlyPrivate(perms), perms)
	}
}

// rssFileKiB is the process's RssFile.
func rssFileKiB(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err)
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(scanner.Text(), "RssFile:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kib
		}
	}
	require.NoError(t, scanner.Err())
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
