package agentos

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// TestMediaUserIsolation: with user isolation on, a user cannot reach
// another user's upload — not by reading the run that holds it (with or
// without include_media_content), not by naming its media_id or media://
// URL in a run of their own — while its owner reads the bytes back.
func TestMediaUserIsolation(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	store, err := media.NewLocal(media.LocalConfig{Dir: filepath.Join(t.TempDir(), "media")})
	require.NoError(t, err)
	model := scripted.New([]scripted.Reply{scripted.Text("alice's photo")})
	a, err := agent.New(agent.Config{ID: "assistant", Model: model, Store: db, Media: store})
	require.NoError(t, err)
	o, err := New(Config{Store: db, Runners: []run.Runner{a}, Media: store, Auth: AuthConfig{UserIsolation: true}})
	require.NoError(t, err)
	mux := http.NewServeMux()
	o.runRoutes(mux)
	scopes := []string{"agents:run", "agents:read"}
	alice, bob := Principal{Subject: "alice", Scopes: scopes}, Principal{Subject: "bob", Scopes: scopes}
	serve := func(p Principal, r *http.Request) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		return rec
	}

	photo := []byte("\x89PNG alice's photo")
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("message", "look"))
	require.NoError(t, mw.WriteField("stream", "false"))
	part, err := mw.CreateFormFile("files", "alice.png")
	require.NoError(t, err)
	_, err = part.Write(photo)
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/agents/assistant/runs", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	rec := serve(alice, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out struct {
		RunID string `json:"run_id"`
		Input struct {
			Images []run.Image `json:"images"`
		} `json:"input"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	mediaID := out.Input.Images[0].MediaID
	require.NotEmpty(t, mediaID)

	get := func(p Principal, query string) *httptest.ResponseRecorder {
		return serve(p, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/agents/assistant/runs/"+out.RunID+query, nil))
	}
	rec = get(alice, "?include_media_content=true")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), base64.StdEncoding.EncodeToString(photo), "the owner reads the bytes back")
	for _, query := range []string{"", "?include_media_content=true"} {
		rec = get(bob, query)
		require.Equal(t, http.StatusNotFound, rec.Code, "bob reads alice's run%s: %s", query, rec.Body.String())
		require.NotContains(t, rec.Body.String(), mediaID)
	}

	for field, value := range map[string]string{
		"images": fmt.Sprintf(`[{"media_id":%q}]`, mediaID),
		"audio":  fmt.Sprintf(`[{"url":%q}]`, run.MediaURL(mediaID)),
	} {
		form := url.Values{"message": {"show me"}, "stream": {"false"}, field: {value}}
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/agents/assistant/runs", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := serve(bob, req)
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, "%s: %s", field, rec.Body.String())
	}
	require.Len(t, model.Requests(), 1, "bob's runs never reach the model")
}
