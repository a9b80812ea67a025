//go:build linux

package residency

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// release tells the kernel, with madvise(MADV_DONTNEED), that the
// executable's read-only private mappings are not needed: their pages are
// unmapped, to be faulted back in from the file when touched. A writable
// mapping would lose what the program wrote to it, so none is touched.
func release() (Released, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Released{}, fmt.Errorf("find the executable: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return Released{}, fmt.Errorf("read the mappings: %w", err)
	}
	stats := Released{ResidentBefore: fileResident()}
	scanner := bufio.NewScanner(bytes.NewReader(maps))
	for scanner.Scan() {
		// start-end perms offset dev inode path; the path may hold spaces.
		line := scanner.Text()
		fields := strings.Fields(line)
		if len(fields) < 6 || !strings.HasSuffix(line, " "+exe) || !readOnlyPrivate(fields[1]) {
			continue
		}
		start, end, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		lo, err1 := strconv.ParseUint(start, 16, 64)
		hi, err2 := strconv.ParseUint(end, 16, 64)
		if err1 != nil || err2 != nil || hi <= lo {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), syscall.MADV_DONTNEED); errno != 0 {
			return stats, fmt.Errorf("madvise %s: %w", fields[0], errno)
		}
		stats.Mappings++
		stats.Bytes += int64(hi - lo)
	}
	stats.ResidentAfter = fileResident()
	return stats, scanner.Err()
}

// fileResident reads RssFile from /proc/self/status.
func fileResident() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kib << 10
		}
	}
	return 0
}

// readOnlyPrivate reports whether a mapping's permissions (as "r-xp") are
// readable, not writable, and private (copy-on-write).
func readOnlyPrivate(perms string) bool {
	return len(perms) == 4 && perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p'
}
