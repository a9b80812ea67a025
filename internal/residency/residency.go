// Package residency releases what a long-running process holds resident of
// its own executable once it has started.
//
// A Go program pages in much of its executable before main runs: every
// package's initialiser runs, and the kernel maps each page touched with
// its neighbours (fault-around, 64 KiB by default). A server that links
// many libraries so holds tens of megabytes of code and constant data that
// only start-up used. [Release] drops them from the process's resident
// set; the pages stay in the page cache, and the kernel maps back in any
// that is used again, at the cost of a minor fault.
package residency

// Released says what [Release] released.
type Released struct {
	// Mappings is how many read-only mappings of the executable were
	// released, and Bytes their size (resident or not).
	Mappings int
	Bytes    int64
	// ResidentBefore and ResidentAfter are the process's file-backed
	// resident memory, in bytes, just before and just after the release
	// (see [FileResident]); 0 where the system does not tell.
	ResidentBefore, ResidentAfter int64
}

// Release drops from the process's resident set the pages of its
// executable's read-only mappings (its code and constant data). Writable
// mappings — the program's variables — are left alone. It does nothing on
// systems other than Linux.
func Release() (Released, error) { return release() }

// FileResident returns how much of the process's resident memory is backed
// by files, in bytes: its executable's pages and those of any other mapped
// file (RssFile in /proc/self/status). It returns 0 on systems other than
// Linux, or when the figure cannot be read.
func FileResident() int64 { return fileResident() }
