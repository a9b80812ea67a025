package agentos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Media kept in the media store (Config.Media): uploads stream into it
// (parseFormWith), JSON media sent inline are moved into it, and runs keep
// references. A run's answer, and GET of a run, show the references; the
// bytes are read back into them only when the client asks with
// include_media_content=true.

// includeMediaField is the form field (and query parameter of GET …/runs/{id})
// that asks for the bytes of stored media in the answer.
const includeMediaField = "include_media_content"

// storedMediaReader is a runner that reads media references back from a
// media store: an agent with agent.Config.Media. Uploads of its runs are
// streamed into Config.Media; other runners get them inline.
type storedMediaReader interface {
	ReadsStoredMedia() bool
}

// mediaStoreFor returns the media store a run of runner keeps its uploads
// in, or nil when its media stay inline.
func (o *OS) mediaStoreFor(runner run.Runner) media.Store {
	if o.cfg.Media == nil {
		return nil
	}
	if reader, ok := runner.(storedMediaReader); ok && reader.ReadsStoredMedia() {
		return o.cfg.Media
	}
	return nil
}

// writeFormError answers a form that could not be read: the status of an
// upload refusal, 500 for a failing media store, 400 otherwise.
func (o *OS) writeFormError(w http.ResponseWriter, r *http.Request, err error) {
	var refused *uploadError
	switch {
	case errors.As(err, &refused):
		writeError(w, refused.status, refused.detail)
	case errors.Is(err, errMediaStore):
		o.internalError(w, r, err)
	default:
		writeError(w, http.StatusBadRequest, err.Error())
	}
}

// noClientMediaIDs refuses media sent as JSON that name a blob of the media
// store: media_id, and the media:// URL, are the server's, set on uploads;
// a client naming a blob could have the model read one it never uploaded —
// another user's.
func (f *form) noClientMediaIDs(in *run.Input) {
	refuse := func(field string, i int, mediaID, url string) {
		switch {
		case mediaID != "":
			f.issues = append(f.issues, invalidField(field, fmt.Sprintf(
				"item %d sets media_id (%q), which the server sets on uploaded files; upload the file, or send its content or url", i, mediaID)))
		case strings.HasPrefix(strings.ToLower(url), run.MediaURLScheme+"://"):
			f.issues = append(f.issues, invalidField(field, fmt.Sprintf(
				"item %d has the url %q, which names a stored file; upload the file, or send its content or an http(s) url", i, url)))
		}
	}
	for i, m := range in.Images {
		refuse("images", i, m.MediaID, m.URL)
	}
	for i, m := range in.Audios {
		refuse("audio", i, m.MediaID, m.URL)
	}
	for i, m := range in.Videos {
		refuse("videos", i, m.MediaID, m.URL)
	}
	for i, m := range in.Files {
		refuse("input_files", i, m.MediaID, m.URL)
	}
}

// offloadJSONMedia moves the bytes of media sent inline as JSON into the
// store, so the run's rows (a background run's PENDING row included) and
// its queue submission hold references.
func offloadJSONMedia(ctx context.Context, store media.Store, in *run.Input) (*run.Input, error) {
	offloaded, err := media.OffloadInput(ctx, store, in)
	var tooLarge *media.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &uploadError{status: http.StatusRequestEntityTooLarge, detail: err.Error() + "; send a smaller file, or raise the server's max_upload_bytes"}
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errMediaStore, err)
	}
	return offloaded, nil
}

// discardUnstarted deletes the blobs a request put for a run that never
// started — refused before its first row was written (a busy session, a
// full queue, a server shutting down, an input the runner refused): no row
// refers to them. A run with a row keeps them, however it ended. Without a
// database nothing can tell, and the blobs stay.
func (o *OS) discardUnstarted(ctx context.Context, store media.Store, in *run.Input) {
	ids := storedMediaIDs(in)
	if len(ids) == 0 || o.cfg.Store == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := o.cfg.Store.GetRun(ctx, in.RunID, ""); !errors.Is(err, storage.ErrNotFound) {
		return
	}
	for _, id := range ids {
		if err := store.Delete(ctx, id); err != nil {
			o.log.WarnContext(ctx, "the upload of a refused run was not deleted", "run_id", in.RunID, "media_id", id, "error", err)
		}
	}
}

// storedMediaIDs lists the blobs an input refers to. Clients cannot send
// media_id (noClientMediaIDs), so on a request's input they are the ones
// the request put.
func storedMediaIDs(in *run.Input) []string {
	var ids []string
	for _, m := range in.Images {
		ids = appendStored(ids, m.Stored(), m.MediaID)
	}
	for _, m := range in.Audios {
		ids = appendStored(ids, m.Stored(), m.MediaID)
	}
	for _, m := range in.Videos {
		ids = appendStored(ids, m.Stored(), m.MediaID)
	}
	for _, m := range in.Files {
		ids = appendStored(ids, m.Stored(), m.MediaID)
	}
	return ids
}

func appendStored(ids []string, stored bool, id string) []string {
	if stored {
		return append(ids, id)
	}
	return ids
}

// includeMediaContent reports whether GET of a run asks for media bytes.
func includeMediaContent(r *http.Request) bool {
	switch strings.ToLower(r.URL.Query().Get(includeMediaField)) {
	case "true", "1", "yes", "on":
		return true
	}
	return false
}

// withMediaContent returns a copy of out whose stored media carry their
// bytes again, read from the media store (for include_media_content=true);
// out itself is not changed. A medium whose blob is gone stays a reference.
// Filled media lose their url, so each carries one source, as Agno clients
// expect.
func (o *OS) withMediaContent(ctx context.Context, out *run.Output) (*run.Output, error) {
	if o.cfg.Media == nil || out == nil {
		return out, nil
	}
	copied := *out
	if out.Input != nil {
		in := *out.Input
		var err error
		if in.Images, err = fill(ctx, o.cfg.Media, in.Images, imageBlob); err != nil {
			return nil, err
		}
		if in.Audios, err = fill(ctx, o.cfg.Media, in.Audios, audioBlob); err != nil {
			return nil, err
		}
		if in.Videos, err = fill(ctx, o.cfg.Media, in.Videos, videoBlob); err != nil {
			return nil, err
		}
		if in.Files, err = fill(ctx, o.cfg.Media, in.Files, fileBlob); err != nil {
			return nil, err
		}
		copied.Input = &in
	}
	copied.Messages = slices.Clone(out.Messages)
	for i, msg := range copied.Messages {
		if !msg.StoredMedia() {
			continue
		}
		m := *msg
		var err error
		if m.Images, err = fill(ctx, o.cfg.Media, m.Images, imageBlob); err != nil {
			return nil, err
		}
		if m.Audio, err = fill(ctx, o.cfg.Media, m.Audio, audioBlob); err != nil {
			return nil, err
		}
		if m.Videos, err = fill(ctx, o.cfg.Media, m.Videos, videoBlob); err != nil {
			return nil, err
		}
		if m.Files, err = fill(ctx, o.cfg.Media, m.Files, fileBlob); err != nil {
			return nil, err
		}
		copied.Messages[i] = &m
	}
	return &copied, nil
}

// blobFields points at the fields of a medium that filling reads and sets.
type blobFields struct {
	stored  bool
	mediaID string
	content *[]byte
	url     *string
}

func imageBlob(m *run.Image) blobFields { return blobFields{m.Stored(), m.MediaID, &m.Content, &m.URL} }
func audioBlob(m *run.Audio) blobFields { return blobFields{m.Stored(), m.MediaID, &m.Content, &m.URL} }
func videoBlob(m *run.Video) blobFields { return blobFields{m.Stored(), m.MediaID, &m.Content, &m.URL} }
func fileBlob(m *run.File) blobFields   { return blobFields{m.Stored(), m.MediaID, &m.Content, &m.URL} }

// fill returns a copy of items whose stored media carry their bytes.
func fill[T any](ctx context.Context, store media.Store, items []T, fields func(*T) blobFields) ([]T, error) {
	if len(items) == 0 {
		return items, nil
	}
	out := slices.Clone(items)
	for i := range out {
		f := fields(&out[i])
		if !f.stored {
			continue
		}
		blob, err := store.Open(ctx, f.mediaID)
		if errors.Is(err, media.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errMediaStore, err)
		}
		data, err := io.ReadAll(blob)
		_ = blob.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: read blob %s: %w", errMediaStore, f.mediaID, err)
		}
		*f.content, *f.url = data, ""
	}
	return out, nil
}
