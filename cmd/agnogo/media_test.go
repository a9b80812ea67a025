package main

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	agnorun "github.com/agnogo/agnogo/run"
)

// mediaPhoto stands for an uploaded photo: 100 KB that must reach the model
// and stay out of the run row.
var mediaPhoto = func() []byte {
	photo := bytes.Repeat([]byte("\xff\xd8\xff\xe0 not really a jpeg "), 5<<10)
	return photo[:100<<10]
}()

// TestServeMediaStorage runs `agnogo serve` with each kind of
// media_storage — the default directory beside the database, a file:// URL
// and an s3:// bucket on an in-process S3 server — and uploads a photo with
// a run: the photo lands in the store, the stored run row keeps a reference
// (media_id) of a few hundred bytes instead of the photo, the answer does
// not echo it, and the model receives its bytes.
func TestServeMediaStorage(t *testing.T) {
	t.Parallel()
	encoded := base64.StdEncoding.EncodeToString(mediaPhoto)
	for _, tc := range []struct {
		name string
		// storage returns the media_storage value for the test's directory
		// ("" leaves the key out) and a check that the store holds the blob.
		storage func(t *testing.T, dir string) (string, func(t *testing.T, mediaID string))
	}{
		{"default", func(t *testing.T, dir string) (string, func(*testing.T, string)) {
			return "", func(t *testing.T, mediaID string) {
				require.FileExists(t, filepath.Join(dir, "media", mediaID), "the default store is the directory media beside the database")
			}
		}},
		{"file", func(t *testing.T, dir string) (string, func(*testing.T, string)) {
			blobs := filepath.Join(dir, "blobs")
			return "file://" + blobs + "?create_dir=true", func(t *testing.T, mediaID string) {
				data, err := os.ReadFile(filepath.Join(blobs, mediaID))
				require.NoError(t, err)
				require.Equal(t, mediaPhoto, data)
			}
		}},
		{"s3", func(t *testing.T, _ string) (string, func(*testing.T, string)) {
			backend := s3mem.New()
			require.NoError(t, backend.CreateBucket("agnogo-media"))
			s3 := httptest.NewServer(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
			t.Cleanup(s3.Close)
			q := url.Values{"endpoint": {s3.URL}, "region": {"us-east-1"}, "use_path_style": {"true"},
				"disable_https": {"true"}, "anonymous": {"true"}, "prefix": {"uploads/"}}
			return "s3://agnogo-media?" + q.Encode(), func(t *testing.T, mediaID string) {
				object, err := backend.GetObject("agnogo-media", "uploads/"+mediaID, nil)
				require.NoError(t, err)
				defer object.Contents.Close()
				data, err := io.ReadAll(object.Contents)
				require.NoError(t, err)
				require.Equal(t, mediaPhoto, data)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupRun(t, assistantAgent)
			storage, holds := tc.storage(t, b.dir)
			if storage != "" {
				appendConfig(t, b.config, "media_storage: "+storage+"\nmax_upload_bytes: 1MiB\n")
			}
			s := startServe(t, "--config", b.config)
			require.Contains(t, s.log.String(), "media=", "the log says where media go")

			b.fake.Enqueue(fakeopenai.Text("a photo"))
			resp := postPhoto(t, s.url, url.Values{"message": {"what is this?"}, "stream": {"false"}, "session_id": {"s1"}}, "photo.jpg", mediaPhoto)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			require.NotContains(t, string(body), encoded[:64], "the answer does not echo the upload")
			var output struct {
				RunID string `json:"run_id"`
				Input struct {
					Images []agnorun.Image `json:"images"`
				} `json:"input"`
			}
			require.NoError(t, json.Unmarshal(body, &output))
			require.Len(t, output.Input.Images, 1)
			ref := output.Input.Images[0]
			require.True(t, ref.Stored(), "%+v", ref)
			require.Equal(t, int64(len(mediaPhoto)), ref.Size)
			holds(t, ref.MediaID)

			require.Contains(t, string(b.fake.Requests()[0].Raw), encoded, "the model receives the photo's bytes")

			row := storedRunData(t, filepath.Join(b.dir, "agnogo.db"), output.RunID)
			require.Less(t, len(row), 4096, "the run row keeps a reference")
			require.Contains(t, row, ref.MediaID)
			require.NotContains(t, row, encoded[:64])

			// The next run of the session reads the photo back for its history.
			b.fake.Enqueue(fakeopenai.Text("the same photo"))
			resp, err = http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"and now?"}, "stream": {"false"}, "session_id": {"s1"}})
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Contains(t, string(b.fake.Requests()[1].Raw), encoded, "history media are read back for the model")

			// A background run (on the durable queue) keeps the reference in its
			// submission and reads the photo back when it executes.
			b.fake.Enqueue(fakeopenai.Text("a photo, later"))
			resp = postPhoto(t, s.url, url.Values{"message": {"later"}, "stream": {"false"}, "background": {"true"}}, "later.jpg", mediaPhoto)
			var accepted struct {
				RunID string `json:"run_id"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
			resp.Body.Close()
			require.Equal(t, http.StatusAccepted, resp.StatusCode)
			var status string
			require.True(t, poll(30*time.Second, 20*time.Millisecond, func() bool {
				_, got := s.get(t, "/agents/assistant/runs/"+accepted.RunID)
				var run struct {
					Status string `json:"status"`
				}
				require.NoError(t, json.Unmarshal([]byte(got), &run), got)
				status = run.Status
				return status == "COMPLETED" || status == "ERROR"
			}), "the background run did not finish (%s)", status)
			require.Equal(t, "COMPLETED", status)
			require.Contains(t, string(b.fake.Requests()[2].Raw), encoded, "the background run's model call gets the bytes")
			require.Less(t, len(storedRunData(t, filepath.Join(b.dir, "agnogo.db"), accepted.RunID)), 4096)

			// max_upload_bytes bounds each file: 413, naming the limit.
			if storage == "" {
				b.fake.Enqueue(fakeopenai.Text("a larger photo"))
			}
			resp = postPhoto(t, s.url, url.Values{"message": {"and this?"}, "stream": {"false"}}, "huge.jpg", make([]byte, 1<<20+1))
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			if storage == "" {
				require.Equal(t, http.StatusOK, resp.StatusCode, "the default limit is 32 MiB: %s", body)
				return
			}
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
			require.Contains(t, string(body), "huge.jpg is larger than the limit of 1 MiB for image/jpeg uploads")
			require.Len(t, b.fake.Requests(), 3, "a refused upload never reaches the model")
		})
	}
}

// appendConfig adds YAML to the end of a config file.
func appendConfig(t *testing.T, config, yaml string) {
	t.Helper()
	data, err := os.ReadFile(config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(config, append(data, yaml...), 0o600))
}

// postPhoto posts a run with one uploaded JPEG.
func postPhoto(t *testing.T, serverURL string, fields url.Values, filename string, photo []byte) *http.Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for name, values := range fields {
		for _, value := range values {
			require.NoError(t, mw.WriteField(name, value))
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="files"; filename="`+filename+`"`)
	h.Set("Content-Type", "image/jpeg")
	part, err := mw.CreatePart(h)
	require.NoError(t, err)
	_, err = part.Write(photo)
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	resp, err := http.Post(serverURL+"/agents/assistant/runs", mw.FormDataContentType(), &body)
	require.NoError(t, err)
	return resp
}

// storedRunData is a run's row as stored (agno_runs.run_data).
func storedRunData(t *testing.T, dbPath, runID string) string {
	t.Helper()
	db, err := sql.Open("sqlite", dbPath)
	require.NoError(t, err)
	defer db.Close()
	var data string
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT run_data FROM agno_runs WHERE run_id = ?`, runID).Scan(&data))
	require.True(t, strings.HasPrefix(data, "{"), "%.100s", data)
	return data
}

// TestServeMediaStorageRefused: a media_storage the server cannot open
// stops it at start, naming the key's line, as any mistake in the config.
func TestServeMediaStorageRefused(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	appendConfig(t, b.config, "media_storage: s3://bucket?region=us-east-1&no_such_parameter=1\n")
	got := agnogo(t, "serve", "--config", b.config, "--addr", "127.0.0.1:0")
	require.Equal(t, exitUsage, got.code, got.stderr)
	require.Regexp(t, `agnogo\.yaml:9: media_storage: media storage s3://bucket.*no_such_parameter`, got.stderr)
	require.NotContains(t, got.stderr, listeningMessage)
}
