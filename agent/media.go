package agent

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/run"
)

// Media in a media store (Config.Media). A run's input media are put in the
// store before the run is first saved, so the run row and its messages hold
// references (media_id) rather than base64. The bytes come back in one
// place only: modelMessages, just before each model call, on copies of the
// messages that go into the request — the conversation the run stores keeps
// the references. The bytes therefore live in memory for the duration of a
// model call, and a continued run or a history message of an earlier run
// resolves the same way.
//
// What a provider is given: an image the store serves publicly goes by its
// URL (both OpenAI and Anthropic fetch image URLs); every other stored
// medium goes as bytes, since neither provider fetches audio or text
// documents, and OpenAI's Chat Completions fetches no PDF.

// errNoMediaStore is the failure of a run whose messages reference stored
// media that this agent cannot read.
var errNoMediaStore = errors.New("the agent has no media store to read it from (agent.Config.Media)")

// ReadsStoredMedia reports whether the agent reads media references back
// from a media store, that is whether [Config.Media] is set. AgentOS streams
// the uploads of the runs of such a runner into its store.
func (a *Agent) ReadsStoredMedia() bool { return a.cfg.Media != nil }

// offloadInput returns in with the bytes of its media put in the media
// store and replaced by references; in itself is not changed. Without a
// store, or without inline media, in is returned as it is. A medium over
// the store's size limit is refused as invalid input.
func (a *Agent) offloadInput(ctx context.Context, in *run.Input) (*run.Input, error) {
	if a.cfg.Media == nil || !in.InlineMedia() {
		return in, nil
	}
	offloaded, err := media.OffloadInput(ctx, a.cfg.Media, in)
	if errors.Is(err, media.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %w", run.ErrInvalidInput, err)
	}
	return offloaded, err
}

// modelMessages returns the messages for a model request: messages, with
// every stored medium read back from the media store. Messages without
// stored media are shared, not copied; messages itself is not changed.
//
// A stored medium of a history message that cannot be read (deleted from
// the store, or no store configured) is left out with a warning, so an old
// session stays usable; one of the run's own messages fails the call.
func (a *Agent) modelMessages(ctx context.Context, messages []*run.Message) ([]*run.Message, error) {
	first := slices.IndexFunc(messages, (*run.Message).StoredMedia)
	if first < 0 {
		return messages, nil
	}
	out := slices.Clone(messages)
	for i := first; i < len(out); i++ {
		if !out[i].StoredMedia() {
			continue
		}
		resolved, err := a.resolveMessage(ctx, out[i])
		if err != nil {
			return nil, err
		}
		out[i] = resolved
	}
	return out, nil
}

// DefaultMaxModelMediaBytes is [Config.MaxModelMediaBytes] when not set:
// 32 MiB, the size of the largest upload AgentOS takes by default
// (media.DefaultMaxBytes) and about what providers take inline (OpenAI: 20
// MB per image, 50 MB per request; Anthropic: 32 MB per request).
const DefaultMaxModelMediaBytes = media.DefaultMaxBytes

// resolveMessage returns a copy of msg whose stored media carry their
// bytes, or their public URL (images, and anything over
// Config.MaxModelMediaBytes).
func (a *Agent) resolveMessage(ctx context.Context, msg *run.Message) (*run.Message, error) {
	copied := *msg
	r := resolver{a: a, ctx: ctx, msg: msg}
	copied.Images = resolveEach(&r, msg.Images, func(img *run.Image) (medium, bool) {
		return medium{"image", cmp.Or(img.Filename, img.ID), img.MediaID, img.MimeType, img.Size, &img.Content, &img.URL}, img.Stored()
	})
	copied.Audio = resolveEach(&r, msg.Audio, func(clip *run.Audio) (medium, bool) {
		return medium{"audio", cmp.Or(clip.Filename, clip.ID), clip.MediaID, clip.MimeType, clip.Size, &clip.Content, &clip.URL}, clip.Stored()
	})
	copied.Videos = resolveEach(&r, msg.Videos, func(clip *run.Video) (medium, bool) {
		return medium{"video", cmp.Or(clip.Filename, clip.ID), clip.MediaID, clip.MimeType, clip.Size, &clip.Content, &clip.URL}, clip.Stored()
	})
	copied.Files = resolveEach(&r, msg.Files, func(file *run.File) (medium, bool) {
		return medium{"file", cmp.Or(file.Filename, file.Name, file.ID), file.MediaID, file.MimeType, file.Size, &file.Content, &file.URL}, file.Stored()
	})
	if r.err != nil {
		return nil, r.err
	}
	if len(r.notes) > 0 {
		// The model learns a file is there even when its bytes are not:
		// "what is in the video I sent?" gets an answer that says why not.
		if text, ok := copied.Content.(string); ok {
			copied.Content = strings.Join(append([]string{text}, r.notes...), "\n\n")
		}
	}
	return &copied, nil
}

// medium is the part of an image, clip or file that resolution reads and
// fills in.
type medium struct {
	kind, name, mediaID, mimeType string
	size                          int64
	content                       *[]byte
	url                           *string
}

// resolver resolves the media of one message, keeping the first failure
// and the notes about media left out for their size.
type resolver struct {
	a     *Agent
	ctx   context.Context
	msg   *run.Message
	err   error
	notes []string
}

// resolveEach returns a copy of items with each stored medium resolved;
// a history medium that cannot be read, and one too large to send, are
// left out.
func resolveEach[T any](r *resolver, items []T, view func(*T) (medium, bool)) []T {
	if len(items) == 0 {
		return items
	}
	out := make([]T, 0, len(items))
	for _, item := range items {
		m, stored := view(&item)
		if stored && r.err == nil {
			keep, err := r.resolve(m)
			if err != nil {
				r.err = err
			}
			if !keep {
				continue
			}
		}
		out = append(out, item)
	}
	return out
}

// resolve fills in one stored medium: an image served publicly keeps its
// URL; anything else gets its bytes, unless it is larger than
// Config.MaxModelMediaBytes (see tooLarge). It reports whether the medium
// is kept.
func (r *resolver) resolve(m medium) (bool, error) {
	if m.kind == "image" && publicURL(*m.url) {
		return true, nil
	}
	if limit := r.a.cfg.MaxModelMediaBytes; limit >= 0 {
		size := m.size
		if size <= 0 { // not recorded: ask the store rather than read it
			ref, err := r.a.statBlob(r.ctx, m.mediaID)
			if err != nil {
				return r.unreadable(m, err)
			}
			size = ref.Size
		}
		if size > limit {
			return r.tooLarge(m, size, limit), nil
		}
	}
	data, err := r.a.readBlob(r.ctx, m.mediaID, m.size)
	if err != nil {
		return r.unreadable(m, err)
	}
	*m.content, *m.url = data, ""
	return true, nil
}

// tooLarge handles a medium over Config.MaxModelMediaBytes without reading
// it, and reports whether it is kept: one with a public URL goes by its
// URL; any other is left out, with a note telling the model it is there.
func (r *resolver) tooLarge(m medium, size, limit int64) bool {
	if publicURL(*m.url) {
		return true
	}
	name := cmp.Or(m.name, m.mediaID)
	r.notes = append(r.notes, fmt.Sprintf("[The user attached the %s %s (%s, %s); it is not included here: it is larger than the %s a model request may carry.]",
		m.kind, name, cmp.Or(m.mimeType, "unknown type"), media.FormatBytes(size), media.FormatBytes(limit)))
	r.a.cfg.Logger.InfoContext(r.ctx, "a stored medium is too large to send to the model; it is left out with a note",
		"kind", m.kind, "name", name, "media_id", m.mediaID, "size", size, "limit", limit)
	return false
}

// unreadable handles a stored medium whose blob cannot be read: one of a
// history message is left out with a warning, one of the run's own
// messages fails the call.
func (r *resolver) unreadable(m medium, err error) (bool, error) {
	if r.ctx.Err() != nil {
		return false, r.ctx.Err()
	}
	if r.msg.FromHistory {
		r.a.cfg.Logger.WarnContext(r.ctx, "a stored medium of a history message cannot be read; it is left out",
			"kind", m.kind, "name", m.name, "media_id", m.mediaID, "error", err)
		return false, nil
	}
	return false, fmt.Errorf("%s %s (media_id %s): %w", m.kind, cmp.Or(m.name, "without id"), m.mediaID, err)
}

// publicURL tells a URL a provider can fetch from the media:// placeholder
// of a store without public URLs.
func publicURL(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

// statBlob returns a blob's reference from the media store.
func (a *Agent) statBlob(ctx context.Context, id string) (media.Ref, error) {
	if a.cfg.Media == nil {
		return media.Ref{}, errNoMediaStore
	}
	return a.cfg.Media.Stat(ctx, id)
}

// maxPrealloc bounds the buffer reserved up front from a medium's recorded
// size, which a client cannot forge (uploads record it) but a row could.
const maxPrealloc = 256 << 20

// readBlob reads a blob of the media store.
func (a *Agent) readBlob(ctx context.Context, id string, size int64) ([]byte, error) {
	if a.cfg.Media == nil {
		return nil, errNoMediaStore
	}
	blob, err := a.cfg.Media.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	defer blob.Close()
	var buf bytes.Buffer
	if size > 0 && size <= maxPrealloc {
		buf.Grow(int(size) + bytes.MinRead) // ReadFrom wants MinRead spare
	}
	if _, err := buf.ReadFrom(blob); err != nil {
		return nil, fmt.Errorf("read media blob %s: %w", id, err)
	}
	return buf.Bytes(), nil
}

// withoutStoredMedia returns in without its stored media, whose URLs (a
// public URL of the store, or media://) are the server's own and not for
// the media URL policy to judge.
func withoutStoredMedia(in *run.Input) *run.Input {
	if in == nil {
		return nil
	}
	view := *in
	view.Images = slices.DeleteFunc(slices.Clone(in.Images), run.Image.Stored)
	view.Audios = slices.DeleteFunc(slices.Clone(in.Audios), run.Audio.Stored)
	view.Videos = slices.DeleteFunc(slices.Clone(in.Videos), run.Video.Stored)
	view.Files = slices.DeleteFunc(slices.Clone(in.Files), run.File.Stored)
	return &view
}
