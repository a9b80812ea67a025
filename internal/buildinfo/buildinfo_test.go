package buildinfo_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/buildinfo"
)

func TestReadNamesTheToolchain(t *testing.T) {
	info := buildinfo.Read()
	require.NotEmpty(t, info.Version)
	require.True(t, strings.HasPrefix(info.GoVersion, "go"), info.GoVersion)
	require.Contains(t, info.String(), info.GoVersion)
}

func TestStringShortensTheRevision(t *testing.T) {
	info := buildinfo.Info{Version: "v0.3.0", Revision: "13177c9abcdef0123456789", Modified: true, GoVersion: "go1.26.8"}
	require.Equal(t, "v0.3.0 (rev 13177c9abcde+dirty, go1.26.8)", info.String())
	require.Equal(t, "devel (go1.26.8)", buildinfo.Info{Version: "devel", GoVersion: "go1.26.8"}.String())
}
