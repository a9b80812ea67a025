package media

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/agnogo/agnogo/run"
)

// OffloadInput returns a copy of in whose inline media (those carrying
// Content) are put in store and replaced by references: media_id set, url
// set to the blob's public URL or [run.MediaURL], size recorded, content
// dropped. in itself is not changed, and is returned as it is when it has no
// inline media. When a medium cannot be put — over the store's limit
// ([*TooLargeError]), or the store fails — the blobs already put are deleted
// and the error names the medium.
func OffloadInput(ctx context.Context, store Store, in *run.Input) (*run.Input, error) {
	if !in.InlineMedia() {
		return in, nil
	}
	o := offloader{ctx: ctx, store: store}
	out := *in
	out.Images = offloadEach(&o, in.Images, func(img *run.Image) inline {
		return inline{"image", cmp.Or(img.Filename, img.ID), img.MimeType, img.Filename, &img.Content, &img.MediaID, &img.URL, &img.Size}
	})
	out.Audios = offloadEach(&o, in.Audios, func(clip *run.Audio) inline {
		return inline{"audio", cmp.Or(clip.Filename, clip.ID), clip.MimeType, clip.Filename, &clip.Content, &clip.MediaID, &clip.URL, &clip.Size}
	})
	out.Videos = offloadEach(&o, in.Videos, func(clip *run.Video) inline {
		return inline{"video", cmp.Or(clip.Filename, clip.ID), clip.MimeType, clip.Filename, &clip.Content, &clip.MediaID, &clip.URL, &clip.Size}
	})
	out.Files = offloadEach(&o, in.Files, func(file *run.File) inline {
		return inline{"file", cmp.Or(file.Filename, file.Name, file.ID), file.MimeType, cmp.Or(file.Filename, file.Name), &file.Content, &file.MediaID, &file.URL, &file.Size}
	})
	if o.err != nil {
		o.rollback()
		return nil, o.err
	}
	return &out, nil
}

// inline is the part of an image, clip or file that offloading reads and
// rewrites.
type inline struct {
	kind, name, mimeType, filename string
	content                        *[]byte
	mediaID, url                   *string
	size                           *int64
}

// offloader puts the media of one input, remembering what it put.
type offloader struct {
	ctx   context.Context
	store Store
	put   []string
	err   error
}

// offloadEach returns a copy of items with each inline medium offloaded.
func offloadEach[T any](o *offloader, items []T, view func(*T) inline) []T {
	if len(items) == 0 || o.err != nil {
		return items
	}
	out := slices.Clone(items)
	for i := range out {
		m := view(&out[i])
		if len(*m.content) == 0 {
			continue
		}
		ref, err := o.store.Put(o.ctx, bytes.NewReader(*m.content), Info{MimeType: m.mimeType, Filename: m.filename})
		if err != nil {
			o.err = fmt.Errorf("%s %s: %w", m.kind, cmp.Or(m.name, strconv.Itoa(i+1)), err)
			return items
		}
		o.put = append(o.put, ref.ID)
		*m.mediaID, *m.url, *m.size, *m.content = ref.ID, cmp.Or(ref.URL, run.MediaURL(ref.ID)), ref.Size, nil
	}
	return out
}

// rollback deletes the blobs put before a failure.
func (o *offloader) rollback() {
	ctx := context.WithoutCancel(o.ctx)
	var errs []error
	for _, id := range o.put {
		errs = append(errs, o.store.Delete(ctx, id))
	}
	if err := errors.Join(errs...); err != nil {
		o.err = errors.Join(o.err, fmt.Errorf("media: removing the blobs of a refused input: %w", err))
	}
}
