package agentos_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/urlpolicy"
)

// TestPrivateMediaURLsAreRefused: with a policy blocking private
// addresses, a run whose image points at a loopback or link-local address
// (a cloud's metadata service) is refused with 400 naming it, before the
// model is called; a public URL goes through.
func TestPrivateMediaURLsAreRefused(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("a cat")}, func(a *agent.Config, _ *agentos.Config) {
		a.MediaURLPolicy = &urlpolicy.Policy{BlockPrivate: true}
	})
	for _, images := range []string{
		`[{"url": "http://127.0.0.1:6379/x.png"}]`,
		`[{"url": "http://169.254.169.254/latest/meta-data/"}]`,
		`[{"url": "http://[::1]/x.png"}]`,
	} {
		resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"what is this?"}, "images": {images}, "stream": {"false"}})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, images)
		require.Contains(t, detail(t, resp), "private, loopback or link-local", images)
	}
	require.Empty(t, s.model.Requests(), "no refused run called the model")

	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"what is this?"},
		"images": {`[{"url": "http://93.184.216.34/cat.png"}]`}, "stream": {"false"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "a cat", decode[map[string]any](t, resp)["content"])
}
