package agentos_test

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/agnogo/agnogo/media"
)

// procStatus reads a size field of /proc/self/status ("VmRSS", "VmHWM"), in
// bytes; 0 where there is no such file.
func procStatus(field string) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		name, value, ok := strings.Cut(scanner.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

func residentSize() uint64 { return procStatus("VmRSS") }

// BenchmarkMediaUpload measures the resident memory of the server (this
// process: an httptest server and its client) while one file is uploaded
// with a run, without a media store (the file read into memory) and with a
// local one (streamed to disk). It reports the idle RSS, the peak RSS
// sampled while the upload arrives, and the process's peak (VmHWM, reset
// before the request) through the end of the run — which includes the model
// call, where the agent reads the file back for the model. It asserts the
// model received the whole file. Run one case per process, not in CI:
//
//	go test ./agentos -run '^$' -bench 'BenchmarkMediaUpload/store-200MB' -benchtime 1x
func BenchmarkMediaUpload(b *testing.B) {
	for _, tc := range []struct {
		name  string
		size  int64
		store bool
	}{
		{"inline-30MB", 30 << 20, false},
		{"store-30MB", 30 << 20, true},
		{"store-200MB", 200 << 20, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				var store media.Store
				if tc.store {
					store = mediaBackends()[0].open(b, media.Limits{MaxBytes: 256 << 20})
				}
				s := newMediaServer(b, store, clipSizeModel())
				runtime.GC()
				debug.FreeOSMemory()
				_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // resets VmHWM
				idle := residentSize()
				body := postSampled(b, s, tc.size, residentSize)
				const mib = 1 << 20
				b.ReportMetric(float64(idle)/mib, "idle-rss-MiB")
				b.ReportMetric(float64(body.peak.Load())/mib, "upload-peak-rss-MiB")
				b.ReportMetric(float64(procStatus("VmHWM"))/mib, "run-peak-rss-MiB")
			}
		})
	}
}
