package agentos_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chromiumPath returns the Chromium to drive: $AGNOGO_CHROMIUM, else
// chromium on PATH. Without one the test is skipped loudly, or failed under
// CI=true (.ci/run installs Debian's chromium).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AGNOGO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium: set AGNOGO_CHROMIUM or install Debian's chromium (.ci/run does)")
	}
	t.Skip("SKIPPING: no Chromium (set AGNOGO_CHROMIUM or install chromium); this test runs in CI")
	return ""
}

// dataPath is how Swagger UI marks each operation's path in its page.
var dataPath = regexp.MustCompile(`data-path="([^"]*)"`)

// TestDocsExplorerLoadsInChromium: /docs, opened in a real headless
// Chromium with no network beyond the server, runs the embedded explorer,
// which fetches /openapi.json and lists every path of it.
func TestDocsExplorerLoadsInChromium(t *testing.T) {
	browser := chromiumPath(t)
	s := newServer(t, nil, nil)

	resp, body := call(t, http.MethodGet, s.URL+"/openapi.json", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	require.NotEmpty(t, doc.Paths)

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--virtual-time-budget=20000", "--dump-dom", s.URL+"/docs")
	dom, err := cmd.Output()
	require.NoError(t, err, "chromium --dump-dom")

	var listed []string
	for _, m := range dataPath.FindAllStringSubmatch(string(dom), -1) {
		if !slices.Contains(listed, m[1]) {
			listed = append(listed, m[1])
		}
	}
	for path := range doc.Paths {
		require.Contains(t, listed, path, "the explorer lists %s", path)
	}
	require.Len(t, listed, len(doc.Paths), "and nothing else")
}
