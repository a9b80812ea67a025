package loadtest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident memory, in bytes.
type Memory struct {
	// RSS is the resident set size now (VmRSS).
	RSS int64
	// Peak is the highest resident set size since the process started
	// (VmHWM, the "high water mark").
	Peak int64
}

// ReadMemory reads the resident memory of process pid from
// /proc/<pid>/status. It works on Linux only.
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("read memory of process %d: %w", pid, err)
	}
	defer f.Close()
	var m Memory
	var found int
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		key, value, ok := strings.Cut(scanner.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		// The kernel writes "VmRSS:	   12345 kB".
		kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("read memory of process %d: parse %s %q: %w", pid, key, value, err)
		}
		if key == "VmRSS" {
			m.RSS = kib << 10
		} else {
			m.Peak = kib << 10
		}
		found++
	}
	if err := scanner.Err(); err != nil {
		return Memory{}, fmt.Errorf("read memory of process %d: %w", pid, err)
	}
	if found != 2 {
		return Memory{}, fmt.Errorf("read memory of process %d: VmRSS or VmHWM missing from /proc/%d/status", pid, pid)
	}
	return m, nil
}

// MiB converts bytes to mebibytes, the unit the benchmarks report memory in.
func MiB(bytes int64) float64 { return float64(bytes) / (1 << 20) }
