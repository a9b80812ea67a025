// Package buildinfo tells which agnogo a binary is: its version, the VCS
// revision it was built from, and the Go toolchain that built it.
//
// The version is, in order: the one set at link time
//
//	go build -ldflags "-X github.com/agnogo/agnogo/internal/buildinfo.version=v1.2.3" ./cmd/agnogo
//
// then the main module's version recorded by the go command (`go install
// …@v1.2.3` records the tag; `go build` in a git checkout records a
// pseudo-version made of the commit's time and hash, "+dirty" when the tree
// had changes), else "devel".
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// version is set at link time with -X; empty means "read the build info".
var version string

// Info describes a build.
type Info struct {
	// Version is the release or pseudo-version, e.g. "v0.3.0" or
	// "v0.0.0-20261201191200-13177c9abcde+dirty"; "devel" when unknown.
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from; empty when the
	// build recorded none.
	Revision string `json:"revision,omitempty"`
	// Time is the commit's time (RFC 3339), when recorded.
	Time string `json:"time,omitempty"`
	// Modified reports a build from a tree with uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go_version"`
}

var read = sync.OnceValue(func() Info {
	info := Info{Version: version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if info.Version == "" {
			info.Version = "devel"
		}
		return info
	}
	if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
})

// Read returns the build's description (read once, then cached).
func Read() Info { return read() }

// String is the one-line form: "v0.3.0 (rev 13177c9abcde, go1.26.8)".
func (i Info) String() string {
	s := i.Version + " ("
	if i.Revision != "" {
		rev := i.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += "rev " + rev
		if i.Modified {
			s += "+dirty"
		}
		s += ", "
	}
	return s + i.GoVersion + ")"
}
