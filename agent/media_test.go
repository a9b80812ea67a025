package agent_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/urlpolicy"
)

// newMediaStore is a local media store for the test.
func newMediaStore(t *testing.T, opts media.Options) *media.Local {
	t.Helper()
	store, err := media.NewLocal(media.LocalConfig{Dir: filepath.Join(t.TempDir(), "media"), Options: opts})
	require.NoError(t, err)
	return store
}

// userMessage is the last user message of a request.
func userMessage(t *testing.T, messages []*run.Message) *run.Message {
	t.Helper()
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == run.RoleUser && !messages[i].FromHistory {
			return messages[i]
		}
	}
	t.Fatal("no user message")
	return nil
}

// TestMediaStoreOffloadsAndResolves: with a media store, a run's inline
// image is stored as a blob; the stored run (its input and its user
// message) keeps a reference, the model receives the bytes, and the next
// run of the session sees the image again through its history.
func TestMediaStoreOffloadsAndResolves(t *testing.T) {
	t.Parallel()
	store := newMediaStore(t, media.Options{})
	b := setup(t, []scripted.Reply{scripted.Text("a cat"), scripted.Text("still a cat")}, func(c *agent.Config) {
		c.Media = store
		c.AddHistoryToContext = true
	})
	require.True(t, b.agent.ReadsStoredMedia())
	photo := []byte("\xff\xd8\xff\xe0 jpeg bytes")
	in := &run.Input{InputContent: "what is this?", SessionID: "s1", UserID: "ada",
		Images: []run.Image{{ID: "img-1", Content: photo, MimeType: "image/jpeg", Format: "jpeg"}}}
	out, err := b.agent.Run(t.Context(), in)
	require.NoError(t, err)
	require.Equal(t, photo, in.Images[0].Content, "the caller's input is not changed")

	sent := userMessage(t, b.model.Requests()[0].Messages)
	require.Len(t, sent.Images, 1)
	require.Equal(t, photo, sent.Images[0].Content, "the model receives the bytes")
	require.Empty(t, sent.Images[0].URL, "the media:// placeholder never reaches a provider")

	rec, err := b.store.GetRun(t.Context(), out.RunID, "ada")
	require.NoError(t, err)
	stored := rec.Run.Input.Images[0]
	require.True(t, stored.Stored(), "the row keeps a reference: %+v", stored)
	require.Equal(t, run.MediaURL(stored.MediaID), stored.URL)
	require.Equal(t, int64(len(photo)), stored.Size)
	require.Equal(t, "img-1", stored.ID)
	for _, msg := range rec.Run.Messages {
		for _, img := range msg.Images {
			require.Empty(t, img.Content, "no message of the row carries the bytes")
			require.Equal(t, stored.MediaID, img.MediaID)
		}
	}

	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "and now?", SessionID: "s1", UserID: "ada"})
	require.NoError(t, err)
	var fromHistory *run.Message
	for _, msg := range b.model.Requests()[1].Messages {
		if msg.FromHistory && len(msg.Images) > 0 {
			fromHistory = msg
		}
	}
	require.NotNil(t, fromHistory, "the earlier image is in the history")
	require.Equal(t, photo, fromHistory.Images[0].Content, "history media are read back too")
}

// TestMediaPublicURL: an image of a store with a public URL is sent by its
// URL; a document of the same store is sent as bytes, which providers need.
func TestMediaPublicURL(t *testing.T) {
	t.Parallel()
	store := newMediaStore(t, media.Options{PublicBaseURL: "https://cdn.example.com/media/"})
	b := setup(t, []scripted.Reply{scripted.Text("ok")}, func(c *agent.Config) {
		c.Media = store
		// The store's own URLs are not the client's: the policy does not judge them.
		c.MediaURLPolicy = &urlpolicy.Policy{Deny: []string{"cdn.example.com"}}
	})
	_, err := b.agent.Run(t.Context(), &run.Input{InputContent: "read", Images: []run.Image{{Content: []byte("png"), MimeType: "image/png"}},
		Files: []run.File{{Content: []byte("# notes"), MimeType: "text/markdown", Filename: "notes.md"}}})
	require.NoError(t, err)
	sent := userMessage(t, b.model.Requests()[0].Messages)
	require.Empty(t, sent.Images[0].Content)
	require.Regexp(t, `^https://cdn\.example\.com/media/[0-9a-f]{32}$`, sent.Images[0].URL)
	require.Equal(t, []byte("# notes"), sent.Files[0].Content)
	require.Empty(t, sent.Files[0].URL)
}

// TestMediaContinueResolves: a paused run whose input had an image resolves
// it again when it is continued.
func TestMediaContinueResolves(t *testing.T) {
	t.Parallel()
	store := newMediaStore(t, media.Options{})
	b := setup(t, []scripted.Reply{scripted.ToolCall("get_weather", `{"city":"Paris"}`), scripted.Text("done")}, func(c *agent.Config) {
		c.Media = store
		c.Tools = []tool.Tool{weatherTool(t, tool.Config{RequiresConfirmation: true})}
	})
	photo := []byte("GIF89a")
	paused, err := b.agent.Run(t.Context(), &run.Input{InputContent: "weather here?", SessionID: "s1",
		Images: []run.Image{{Content: photo, MimeType: "image/gif"}}})
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, paused.Status)
	resolution := *paused.Tools[0]
	resolution.Confirmed = new(true)
	_, err = b.agent.ContinueRun(t.Context(), &agent.ContinueRequest{RunID: paused.RunID, Tools: []*run.ToolExecution{&resolution}})
	require.NoError(t, err)
	require.Len(t, b.model.Requests(), 2)
	require.Equal(t, photo, userMessage(t, b.model.Requests()[1].Messages).Images[0].Content)
}

// TestMediaMissingBlob: a stored medium of the run that is gone fails the
// run, naming it; one of a history message is left out and the run goes on.
func TestMediaMissingBlob(t *testing.T) {
	t.Parallel()
	store := newMediaStore(t, media.Options{})
	b := setup(t, []scripted.Reply{scripted.Text("first"), scripted.Text("second")}, func(c *agent.Config) {
		c.Media = store
		c.AddHistoryToContext = true
	})
	first, err := b.agent.Run(t.Context(), &run.Input{InputContent: "look", SessionID: "s1",
		Files: []run.File{{Content: []byte("%PDF-1.7"), MimeType: "application/pdf", Filename: "report.pdf"}}})
	require.NoError(t, err)
	require.NoError(t, store.Delete(t.Context(), first.Input.Files[0].MediaID))

	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "again", SessionID: "s1"})
	require.NoError(t, err, "a history medium that is gone is left out")
	for _, msg := range b.model.Requests()[1].Messages {
		require.Empty(t, msg.Files, "the missing document is not sent")
	}

	ref, err := store.Put(t.Context(), bytes.NewReader([]byte("x")), media.Info{MimeType: "image/png"})
	require.NoError(t, err)
	require.NoError(t, store.Delete(t.Context(), ref.ID))
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "this one", Images: []run.Image{{ID: "img-9", MediaID: ref.ID, URL: run.MediaURL(ref.ID)}}})
	require.Error(t, err)
	require.Equal(t, run.StatusError, out.Status)
	require.ErrorIs(t, err, media.ErrNotFound)
	require.ErrorContains(t, err, "image img-9")
	require.Len(t, b.model.Requests(), 2, "the model is not called without the image")
}

// TestMediaTooLarge: an inline medium over the store's limit refuses the
// run as invalid input before the model is called, and leaves no blob.
func TestMediaTooLarge(t *testing.T) {
	t.Parallel()
	store := newMediaStore(t, media.Options{Limits: media.Limits{MaxBytes: 4}})
	b := setup(t, []scripted.Reply{scripted.Text("never")}, func(c *agent.Config) { c.Media = store })
	_, err := b.agent.Run(t.Context(), &run.Input{InputContent: "look",
		Images: []run.Image{{Content: []byte("1234"), MimeType: "image/png"}, {Content: []byte("12345"), MimeType: "image/png"}}})
	require.ErrorIs(t, err, run.ErrInvalidInput)
	require.ErrorIs(t, err, media.ErrTooLarge)
	require.ErrorContains(t, err, "larger than the limit of 4 bytes for image/png")
	require.Empty(t, b.model.Requests())
	entries, err := filepath.Glob(filepath.Join(store.Dir(), "*"))
	require.NoError(t, err)
	require.Empty(t, entries, "the first image's blob is removed with the refusal")
}

// TestMediaWithoutStore: an agent without a media store keeps media inline,
// and a reference in its run fails with a message saying what to configure.
func TestMediaWithoutStore(t *testing.T) {
	t.Parallel()
	b := setup(t, []scripted.Reply{scripted.Text("ok")}, nil)
	require.False(t, b.agent.ReadsStoredMedia())
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "look", Images: []run.Image{{Content: []byte("png")}}})
	require.NoError(t, err)
	require.Equal(t, []byte("png"), out.Input.Images[0].Content)

	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "look", Images: []run.Image{{MediaID: "abc"}}})
	require.ErrorContains(t, err, "agent.Config.Media")
}

// TestMediaTooLargeForModel: a stored medium over MaxModelMediaBytes is
// never read back: without a public URL it is left out of the request and
// the message says it is attached; with one it goes by its URL. The run
// completes either way, and the run row keeps the reference.
func TestMediaTooLargeForModel(t *testing.T) {
	t.Parallel()
	clip := bytes.Repeat([]byte{0x42}, 100)

	store := newMediaStore(t, media.Options{})
	b := setup(t, []scripted.Reply{scripted.Text("ok"), scripted.Text("ok")}, func(c *agent.Config) {
		c.Media = store
		c.MaxModelMediaBytes = 64
	})
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "what is in it?",
		Videos: []run.Video{{Content: clip, MimeType: "video/mp4", Filename: "clip.mp4"}},
		Images: []run.Image{{Content: []byte("small"), MimeType: "image/png"}}})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	sent := userMessage(t, b.model.Requests()[0].Messages)
	require.Empty(t, sent.Videos, "the clip is not read back")
	require.Equal(t, []byte("small"), sent.Images[0].Content, "a medium within the bound is")
	require.Equal(t, "what is in it?\n\n[The user attached the video clip.mp4 (video/mp4, 100 bytes); it is not included here: "+
		"it is larger than the 64 bytes a model request may carry.]", sent.Content)
	require.True(t, out.Input.Videos[0].Stored(), "the run keeps the reference")

	// A reference without a recorded size is measured by the store, not read.
	ref, err := store.Put(t.Context(), bytes.NewReader(clip), media.Info{MimeType: "audio/wav"})
	require.NoError(t, err)
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "listen", Audios: []run.Audio{{ID: "a1", MediaID: ref.ID, URL: run.MediaURL(ref.ID)}}})
	require.NoError(t, err)
	sent = userMessage(t, b.model.Requests()[1].Messages)
	require.Empty(t, sent.Audio)
	require.Contains(t, sent.Content, "the audio a1 (unknown type, 100 bytes)")

	public := newMediaStore(t, media.Options{PublicBaseURL: "https://cdn.example.com/media/"})
	b = setup(t, []scripted.Reply{scripted.Text("ok")}, func(c *agent.Config) {
		c.Media = public
		c.MaxModelMediaBytes = 64
	})
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "read",
		Files: []run.File{{Content: clip, MimeType: "application/pdf", Filename: "big.pdf"}}})
	require.NoError(t, err)
	sent = userMessage(t, b.model.Requests()[0].Messages)
	require.Len(t, sent.Files, 1)
	require.Empty(t, sent.Files[0].Content)
	require.Regexp(t, `^https://cdn\.example\.com/media/[0-9a-f]{32}$`, sent.Files[0].URL, "a public URL is sent instead")
	require.Equal(t, "read", sent.Content)
}
