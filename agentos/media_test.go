package agentos_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"iter"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // reads run rows as stored

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/media/blobstore"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/urlpolicy"
)

// mediaServer is an AgentOS over SQLite whose agent keeps media in a media
// store.
type mediaServer struct {
	*server
	media  media.Store
	dbPath string
}

// mediaBackend makes the media store of a test.
type mediaBackend struct {
	name string
	open func(t testing.TB, limits media.Limits) media.Store
}

// mediaBackends are the stores every media test runs against: a local
// directory, and S3 (an in-process S3 server).
func mediaBackends() []mediaBackend {
	return []mediaBackend{
		{"local", func(t testing.TB, limits media.Limits) media.Store {
			store, err := media.Open(t.Context(), filepath.Join(t.TempDir(), "media"), media.WithLimits(limits))
			require.NoError(t, err)
			return store
		}},
		{"s3", func(t testing.TB, limits media.Limits) media.Store {
			backend := s3mem.New()
			require.NoError(t, backend.CreateBucket("agnogo-media"))
			s3 := httptest.NewServer(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
			t.Cleanup(s3.Close)
			q := url.Values{"endpoint": {s3.URL}, "region": {"us-east-1"}, "use_path_style": {"true"},
				"disable_https": {"true"}, "anonymous": {"true"}, "prefix": {"media/"}}
			store, err := media.Open(t.Context(), "s3://agnogo-media?"+q.Encode(), media.WithLimits(limits))
			require.NoError(t, err)
			require.IsType(t, &blobstore.Store{}, store)
			return store
		}},
	}
}

// newMediaServer serves an agent that keeps media in store (nil: inline).
func newMediaServer(t testing.TB, store media.Store, replies []scripted.Reply) *mediaServer {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "os.db")
	db, err := sqlite.Open(t.Context(), sqlite.Config{Path: dbPath})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	m := scripted.New(replies)
	a, err := agent.New(agent.Config{ID: "assistant", Model: m, Store: db, AddHistoryToContext: true, Media: store})
	require.NoError(t, err)
	os, err := agentos.New(agentos.Config{Store: db, Runners: []run.Runner{a}, Media: store})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	if store != nil {
		t.Cleanup(func() { require.NoError(t, store.Close()) })
	}
	return &mediaServer{server: &server{Server: ts, model: m, store: db, os: os}, media: store, dbPath: dbPath}
}

// rowSize is the length of a run's stored JSON (agno_runs.run_data).
func (s *mediaServer) rowSize(t testing.TB, runID string) int {
	t.Helper()
	db, err := sql.Open("sqlite", s.dbPath)
	require.NoError(t, err)
	defer db.Close()
	var size int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT length(run_data) FROM agno_runs WHERE run_id = ?`, runID).Scan(&size))
	return size
}

// testJPEG is a real 468×351 JPEG of noise, 113,213 bytes: the size of the
// photo the row-size measurement in docs/benchmarks.md uses.
func testJPEG(t *testing.T) []byte {
	t.Helper()
	const w, h = 468, 351
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x + r.IntN(64)), uint8(y + r.IntN(64)), uint8(r.IntN(256)), 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}))
	return buf.Bytes()
}

// lastUser is the last user message the model was sent that is not history.
func lastUser(t *testing.T, messages []*run.Message) *run.Message {
	t.Helper()
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == run.RoleUser && !messages[i].FromHistory {
			return messages[i]
		}
	}
	t.Fatal("no user message")
	return nil
}

// TestMediaUploadKeepsReferences: with a media store (a local directory or
// S3), an uploaded photo reaches the model as bytes, while the run row, the
// answer and GET of the run keep a small reference; the bytes come back
// with include_media_content=true, and the next run of the session sees the
// photo again through its history.
func TestMediaUploadKeepsReferences(t *testing.T) {
	t.Parallel()
	photo := testJPEG(t)
	encoded := base64.StdEncoding.EncodeToString(photo)
	for _, backend := range mediaBackends() {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			s := newMediaServer(t, backend.open(t, media.Limits{}), []scripted.Reply{scripted.Text("a photo"), scripted.Text("the same photo")})
			resp := s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"what is this?"}, "stream": {"false"}, "session_id": {"s1"}},
				upload{"photo.jpg", "image/jpeg", photo})
			body := readAll(t, resp)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			require.NotContains(t, body, encoded[:64], "the answer does not echo the upload")
			require.Less(t, len(body), 8<<10)

			sent := lastUser(t, s.model.Requests()[0].Messages)
			require.Len(t, sent.Images, 1)
			require.Equal(t, photo, sent.Images[0].Content, "the model receives the bytes")

			var out map[string]any
			require.NoError(t, json.Unmarshal([]byte(body), &out))
			runID := out["run_id"].(string)
			images := out["input"].(map[string]any)["images"].([]any)
			ref := images[0].(map[string]any)
			mediaID := ref["media_id"].(string)
			require.Equal(t, "image/jpeg", ref["mime_type"])
			require.Equal(t, "jpg", ref["format"])
			require.Equal(t, "photo.jpg", ref["filename"])
			require.Equal(t, float64(len(photo)), ref["size"])
			require.Equal(t, "media://"+mediaID, ref["url"])
			require.NotContains(t, ref, "content")
			stat, err := s.media.Stat(t.Context(), mediaID)
			require.NoError(t, err)
			require.Equal(t, int64(len(photo)), stat.Size)

			rowSize := s.rowSize(t, runID)
			require.LessOrEqual(t, rowSize, 4096, "the run row keeps a reference, not the photo")
			t.Logf("%s: run row %d bytes for a %d-byte JPEG", backend.name, rowSize, len(photo))

			got := readAll(t, s.get(t, "/agents/assistant/runs/"+runID))
			require.NotContains(t, got, encoded[:64], "GET of the run does not echo the upload")
			require.Contains(t, got, mediaID)
			withBytes := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID+"?include_media_content=true"))
			filled := withBytes["input"].(map[string]any)["images"].([]any)[0].(map[string]any)
			require.Equal(t, encoded, filled["content"], "include_media_content=true reads the bytes back")
			require.NotContains(t, filled, "url", "a filled medium carries one source")

			resp = s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"and now?"}, "stream": {"false"}, "session_id": {"s1"}})
			require.Equal(t, http.StatusOK, resp.StatusCode, readAll(t, resp))
			var fromHistory []run.Image
			for _, msg := range s.model.Requests()[1].Messages {
				if msg.FromHistory {
					fromHistory = append(fromHistory, msg.Images...)
				}
			}
			require.Len(t, fromHistory, 1, "the earlier photo is in the history")
			require.Equal(t, photo, fromHistory[0].Content, "and is read back for the model")
		})
	}
}

// TestMediaRowSizeBeforeAfter measures the run row of the same upload
// without a media store (bytes inline, base64) and with one.
func TestMediaRowSizeBeforeAfter(t *testing.T) {
	t.Parallel()
	photo := testJPEG(t)
	sizes := map[string]int{}
	for name, store := range map[string]media.Store{"inline": nil, "media store": mediaBackends()[0].open(t, media.Limits{})} {
		s := newMediaServer(t, store, []scripted.Reply{scripted.Text("a photo")})
		out := decode[map[string]any](t, s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"what is this?"}, "stream": {"false"}},
			upload{"photo.jpg", "image/jpeg", photo}))
		sizes[name] = s.rowSize(t, out["run_id"].(string))
	}
	t.Logf("run row for a %d-byte JPEG: %d bytes inline, %d bytes with a media store", len(photo), sizes["inline"], sizes["media store"])
	require.Greater(t, sizes["inline"], 2*len(photo), "inline, the input and the user message each hold the base64")
	require.LessOrEqual(t, sizes["media store"], 4096)
}

// TestMediaStreamedAnswer: a streamed run with an upload sends no media
// bytes in its events.
func TestMediaStreamedAnswer(t *testing.T) {
	t.Parallel()
	photo := testJPEG(t)
	s := newMediaServer(t, mediaBackends()[0].open(t, media.Limits{}), []scripted.Reply{scripted.Text("a photo")})
	resp := s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"what is this?"}}, upload{"photo.jpg", "image/jpeg", photo})
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "RunCompleted")
	require.NotContains(t, body, base64.StdEncoding.EncodeToString(photo)[:64])
	require.Len(t, s.model.Requests(), 1)
}

// TestMediaUploadLimits: a file over the store's limit is refused with 413
// naming the file and the limit, before the model is called and without
// keeping any of it; a per-type limit applies to its type only.
func TestMediaUploadLimits(t *testing.T) {
	t.Parallel()
	for _, backend := range mediaBackends() {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			store := backend.open(t, media.Limits{MaxBytes: 1 << 10, PerType: map[string]int64{"video": 4 << 10}})
			s := newMediaServer(t, store, []scripted.Reply{scripted.Text("ok")})
			accepted := 0
			fields := url.Values{"message": {"look"}, "stream": {"false"}}

			resp := s.postMultipart(t, "/agents/assistant/runs", fields,
				upload{"small.png", "image/png", make([]byte, 100)}, upload{"big.png", "image/png", make([]byte, 2<<10)})
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			detail := decode[map[string]any](t, resp)["detail"].(string)
			require.Contains(t, detail, "big.png")
			require.Contains(t, detail, "1 KiB")
			require.Contains(t, detail, "image/png")

			resp = s.postMultipart(t, "/agents/assistant/runs", fields, upload{"clip.mp4", "video/mp4", make([]byte, 3<<10)})
			require.Equal(t, http.StatusOK, resp.StatusCode, "a video has its own, larger limit: %s", readAll(t, resp))
			accepted++

			resp = s.postMultipart(t, "/agents/assistant/runs", fields, upload{"long.mp4", "video/mp4", make([]byte, 5<<10)})
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			require.Contains(t, decode[map[string]any](t, resp)["detail"], "long.mp4 is larger than the limit of 4 KiB for video/mp4")

			require.Len(t, s.model.Requests(), accepted, "refused uploads never reach the model")
			if local, ok := store.(*media.Local); ok {
				entries, err := filepath.Glob(filepath.Join(local.Dir(), "*"))
				require.NoError(t, err)
				require.Len(t, entries, 2, "only the accepted video is kept (blob and metadata): %v", entries)
			}
		})
	}
}

// TestMediaFormRefusals: with a media store, a refused form keeps nothing
// it streamed, an unsupported or empty file is a 400, and a client cannot
// name a blob of the store with media_id.
func TestMediaFormRefusals(t *testing.T) {
	t.Parallel()
	store := mediaBackends()[0].open(t, media.Limits{})
	s := newMediaServer(t, store, []scripted.Reply{scripted.Text("ok")})
	local := store.(*media.Local)
	kept := func() []string {
		entries, err := filepath.Glob(filepath.Join(local.Dir(), "*"))
		require.NoError(t, err)
		return entries
	}

	resp := s.postMultipart(t, "/agents/assistant/runs", url.Values{"stream": {"false"}}, upload{"photo.png", "image/png", []byte("png")})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "message is required")
	require.Empty(t, kept(), "the upload of a refused form is deleted")

	resp = s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"x"}}, upload{"photo.png", "image/png", []byte("png")},
		upload{"archive.zip", "application/zip", []byte("PK")})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, decode[map[string]any](t, resp)["detail"], "Unsupported file type: archive.zip (application/zip)")
	require.Empty(t, kept())

	resp = s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"x"}}, upload{"blank.txt", "text/plain", nil})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, decode[map[string]any](t, resp)["detail"], "Empty file: blank.txt")

	ref, err := store.Put(t.Context(), strings.NewReader("someone else's"), media.Info{MimeType: "image/png"})
	require.NoError(t, err)
	forged := fmt.Sprintf(`[{"media_id":%q,"url":"media://%s"}]`, ref.ID, ref.ID)
	resp = s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"x"}, "stream": {"false"}, "images": {forged}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readAll(t, resp), "media_id")
	require.Empty(t, s.model.Requests())
}

// TestMediaJSONContentOffloaded: media sent inline as JSON are moved into
// the store too, so the row holds a reference.
func TestMediaJSONContentOffloaded(t *testing.T) {
	t.Parallel()
	s := newMediaServer(t, mediaBackends()[0].open(t, media.Limits{}), []scripted.Reply{scripted.Text("ok")})
	content := bytes.Repeat([]byte("pdf "), 4<<10)
	files := fmt.Sprintf(`[{"content":%q,"mime_type":"application/pdf","filename":"a.pdf"}]`, base64.StdEncoding.EncodeToString(content))
	out := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"read"}, "stream": {"false"}, "input_files": {files}}))
	require.Equal(t, "COMPLETED", out["status"])
	require.Equal(t, content, lastUser(t, s.model.Requests()[0].Messages).Files[0].Content)
	file := out["input"].(map[string]any)["files"].([]any)[0].(map[string]any)
	require.NotEmpty(t, file["media_id"])
	require.NotContains(t, file, "content")
	require.LessOrEqual(t, s.rowSize(t, out["run_id"].(string)), 4096)
}

// TestMediaBackgroundRun: a background run's PENDING row and its final row
// hold the reference; the run reads the photo back when it executes.
func TestMediaBackgroundRun(t *testing.T) {
	t.Parallel()
	photo := testJPEG(t)
	s := newMediaServer(t, mediaBackends()[0].open(t, media.Limits{}), []scripted.Reply{scripted.Text("a photo")})
	resp := s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"what is this?"}, "background": {"true"}, "stream": {"false"}},
		upload{"photo.jpg", "image/jpeg", photo})
	accepted := decode[map[string]any](t, resp)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, accepted)
	runID := accepted["run_id"].(string)
	require.LessOrEqual(t, s.rowSize(t, runID), 4096, "the PENDING row holds the reference")
	var status string
	poll(t, 10*time.Second, 10*time.Millisecond, func() bool {
		status = decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID))["status"].(string)
		return status == "COMPLETED" || status == "ERROR"
	}, "the background run did not finish")
	require.Equal(t, "COMPLETED", status)
	require.Equal(t, photo, lastUser(t, s.model.Requests()[0].Messages).Images[0].Content)
	require.LessOrEqual(t, s.rowSize(t, runID), 4096)
}

// inlineRunner is a runner that cannot read media references back (as an
// external agent): it answers with its input.
type inlineRunner struct{}

func (inlineRunner) ID() string     { return "inline" }
func (inlineRunner) Name() string   { return "Inline" }
func (inlineRunner) Kind() run.Kind { return run.KindAgent }
func (r inlineRunner) Stream(ctx context.Context, in *run.Input) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		yield(&run.RunCompleted{BaseEvent: run.BaseEvent{RunID: in.RunID, SessionID: in.SessionID, AgentID: r.ID()}}, nil)
	}
}
func (r inlineRunner) Run(_ context.Context, in *run.Input) (*run.Output, error) {
	return &run.Output{RunID: in.RunID, AgentID: r.ID(), SessionID: in.SessionID, Input: in, Status: run.StatusCompleted}, nil
}

// TestMediaOnlyForReadingRunners: uploads to a runner that cannot read the
// store's references back are given to it inline, as without a store.
func TestMediaOnlyForReadingRunners(t *testing.T) {
	t.Parallel()
	store := mediaBackends()[0].open(t, media.Limits{})
	os, err := agentos.New(agentos.Config{Runners: []run.Runner{inlineRunner{}}, Media: store})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	s := &server{Server: ts}
	out := decode[map[string]any](t, s.postMultipart(t, "/agents/inline/runs", url.Values{"message": {"look"}, "stream": {"false"}},
		upload{"photo.png", "image/png", []byte("png")}))
	image := out["input"].(map[string]any)["images"].([]any)[0].(map[string]any)
	require.Equal(t, base64.StdEncoding.EncodeToString([]byte("png")), image["content"])
	require.NotContains(t, image, "media_id")
	entries, err := filepath.Glob(filepath.Join(store.(*media.Local).Dir(), "*"))
	require.NoError(t, err)
	require.Empty(t, entries)
}

// sampledUpload is a request body of n bytes of one uploaded video that
// measures the server (this process) before each chunk it hands over — the
// upload is in flight then — and keeps the largest measure.
type sampledUpload struct {
	body    io.Reader
	peak    atomic.Uint64
	measure func() uint64
}

// heapInUse is the process's HeapInuse.
func heapInUse() uint64 {
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapInuse
}

// newSampledUpload builds the multipart body of an upload of n bytes.
func newSampledUpload(n int64, measure func() uint64) (*sampledUpload, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	s := &sampledUpload{body: pr, measure: measure}
	go func() {
		_ = mw.WriteField("message", "describe the clip")
		_ = mw.WriteField("stream", "false")
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="files"; filename="clip.mp4"`)
		h.Set("Content-Type", "video/mp4")
		part, err := mw.CreatePart(h)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		chunk := bytes.Repeat([]byte{0x42}, 256<<10)
		for sent := int64(0); sent < n; sent += int64(len(chunk)) {
			s.sample()
			if _, err := part.Write(chunk[:min(int64(len(chunk)), n-sent)]); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	return s, mw.FormDataContentType()
}

func (s *sampledUpload) sample() {
	value := s.measure()
	for {
		peak := s.peak.Load()
		if value <= peak || s.peak.CompareAndSwap(peak, value) {
			return
		}
	}
}

// postSampled posts a run with a sampled upload of n bytes and checks what
// the model received (see clipSizeModel): all of it, or, over the agent's
// MaxModelMediaBytes, the note that says it is attached.
func postSampled(t testing.TB, s *mediaServer, n int64, measure func() uint64) *sampledUpload {
	t.Helper()
	body, contentType := newSampledUpload(n, measure)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/agents/assistant/runs", body.body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	want := fmt.Sprintf("%d bytes", n)
	if s.media != nil && n > agent.DefaultMaxModelMediaBytes {
		want = "attached, not sent" // never read back: no provider takes it inline
	}
	require.Equal(t, want, out["content"], "what the model received of the clip")
	return body
}

// clipSizeModel answers with the bytes of video it received, or says the
// clip was left out for its size.
func clipSizeModel() []scripted.Reply {
	return []scripted.Reply{scripted.Respond(func(req *model.Request) scripted.Reply {
		received := 0
		for _, msg := range req.Messages {
			for _, clip := range msg.Videos {
				received += len(clip.Content)
			}
			if text, _ := msg.Content.(string); strings.Contains(text, "The user attached the video clip.mp4") && received == 0 {
				return scripted.Text("attached, not sent")
			}
		}
		return scripted.Text(fmt.Sprintf("%d bytes", received))
	})}
}

// TestMediaUploadHeapBounded: a 50 MB upload streams into the store: the
// heap grows by a few megabytes while it arrives, not by the file (without
// a store it would hold the file, and more).
func TestMediaUploadHeapBounded(t *testing.T) {
	const size = 50 << 20
	store := mediaBackends()[0].open(t, media.Limits{MaxBytes: 64 << 20})
	s := newMediaServer(t, store, clipSizeModel())
	runtime.GC()
	before := heapInUse()
	started := time.Now()
	body := postSampled(t, s, size, heapInUse)
	growth := int64(body.peak.Load()) - int64(before)
	t.Logf("50 MB upload in %v: heap in use %d MiB before, peak %d MiB while uploading (%+d MiB)",
		time.Since(started).Round(time.Millisecond), before>>20, body.peak.Load()>>20, growth>>20)
	require.Less(t, growth, int64(16<<20), "the upload is streamed, not held")
}

// storedEntries lists what a local media store keeps on disk.
func storedEntries(t *testing.T, store media.Store) []string {
	t.Helper()
	entries, err := filepath.Glob(filepath.Join(store.(*media.Local).Dir(), "*"))
	require.NoError(t, err)
	return entries
}

// TestMediaRefusedRunKeepsNoUploads: a run refused after its form was read
// but before its first row — here an image URL the agent's media URL policy
// blocks — leaves none of its uploads behind, streamed or not; a run that
// was saved keeps them, even one that failed.
func TestMediaRefusedRunKeepsNoUploads(t *testing.T) {
	t.Parallel()
	store := mediaBackends()[0].open(t, media.Limits{})
	db, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	m := scripted.New([]scripted.Reply{scripted.Fail(errors.New("the model is down"))})
	a, err := agent.New(agent.Config{ID: "assistant", Model: m, Store: db, Media: store, MediaURLPolicy: &urlpolicy.Policy{BlockPrivate: true}})
	require.NoError(t, err)
	os, err := agentos.New(agentos.Config{Store: db, Runners: []run.Runner{a}, Media: store})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	s := &server{Server: ts}

	private := url.Values{"message": {"look"}, "images": {`[{"url":"http://127.0.0.1/secret.png"}]`}}
	for _, stream := range []string{"false", "true"} {
		private.Set("stream", stream)
		resp := s.postMultipart(t, "/agents/assistant/runs", private, upload{"photo.png", "image/png", []byte("png bytes")})
		body := readAll(t, resp)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "stream=%s: %s", stream, body)
		require.Contains(t, body, "127.0.0.1")
		require.Empty(t, storedEntries(t, store), "stream=%s: the refused run's upload is deleted", stream)
	}

	resp := s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"look"}, "stream": {"false"}},
		upload{"photo.png", "image/png", []byte("png bytes")})
	require.Equal(t, "ERROR", decode[map[string]any](t, resp)["status"])
	require.Len(t, storedEntries(t, store), 2, "a saved run keeps its upload (blob and metadata), however it ended")
}

// TestMediaBrokenUploadKeepsNothing: a client whose upload breaks off in
// its second file leaves neither file behind.
func TestMediaBrokenUploadKeepsNothing(t *testing.T) {
	t.Parallel()
	store := mediaBackends()[0].open(t, media.Limits{})
	s := newMediaServer(t, store, []scripted.Reply{scripted.Text("never")})
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("message", "look"))
	part, err := mw.CreateFormFile("files", "whole.png")
	require.NoError(t, err)
	_, err = part.Write(bytes.Repeat([]byte("a"), 100<<10))
	require.NoError(t, err)
	part, err = mw.CreateFormFile("files", "cut.png")
	require.NoError(t, err)
	_, err = part.Write(bytes.Repeat([]byte("b"), 100<<10))
	require.NoError(t, err)

	conn, err := net.Dial("tcp", s.Listener.Addr().String())
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "POST /agents/assistant/runs HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		mw.FormDataContentType(), body.Len()+1<<20)
	require.NoError(t, err)
	_, err = conn.Write(body.Bytes()) // the second file never ends
	require.NoError(t, err)
	poll(t, 10*time.Second, 5*time.Millisecond, func() bool { return len(storedEntries(t, store)) >= 2 },
		"the first file was never stored")
	require.NoError(t, conn.Close())

	poll(t, 10*time.Second, 5*time.Millisecond, func() bool { return len(storedEntries(t, store)) == 0 },
		"the uploads of a broken request are left behind: %v", storedEntries(t, store))
	require.Empty(t, s.model.Requests())
}

// TestMediaURLOfTheStoreRefused: a client cannot name a stored blob by its
// media:// URL either.
func TestMediaURLOfTheStoreRefused(t *testing.T) {
	t.Parallel()
	store := mediaBackends()[0].open(t, media.Limits{})
	s := newMediaServer(t, store, []scripted.Reply{scripted.Text("never")})
	ref, err := store.Put(t.Context(), strings.NewReader("someone else's"), media.Info{MimeType: "audio/wav"})
	require.NoError(t, err)
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"x"}, "stream": {"false"},
		"audio": {fmt.Sprintf(`[{"url":%q}]`, run.MediaURL(ref.ID))}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readAll(t, resp), "names a stored file")
	require.Empty(t, s.model.Requests())
}
