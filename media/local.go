package media

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// LocalConfig configures a [Local] store.
type LocalConfig struct {
	// Dir holds the blobs. Required. It is created (mode 0700) by the first
	// Put, so a store that never receives a blob leaves nothing on disk.
	// agnogo keeps it under its data directory.
	Dir string
	// Options are the limits, public URL and id generator every store
	// shares.
	Options
}

// Local keeps blobs as files in one directory: <id> holds a blob's bytes and
// <id>.json its MIME type and file name. A blob is written to a temporary
// file, flushed to disk and renamed into place, so a crash never leaves a
// partial blob under its id. It is the default store.
type Local struct {
	dir  string
	opts Options
}

var _ Store = (*Local)(nil)

// localMeta is what <id>.json holds.
type localMeta struct {
	MimeType string `json:"mime_type,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// NewLocal opens the directory store in cfg.Dir (see [LocalConfig.Dir]).
func NewLocal(cfg LocalConfig) (*Local, error) {
	if cfg.Dir == "" {
		return nil, errors.New("media: local store: Dir is required")
	}
	opts, err := cfg.Options.Prepare()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("media: local store %s: %w", cfg.Dir, err)
	}
	if info, err := os.Stat(dir); err == nil && !info.IsDir() {
		return nil, fmt.Errorf("media: local store %s: not a directory", dir)
	}
	return &Local{dir: dir, opts: opts}, nil
}

// Dir is the directory the store keeps its blobs in.
func (l *Local) Dir() string { return l.dir }

func (l *Local) path(id string) string { return filepath.Join(l.dir, id) }
func (l *Local) meta(id string) string { return filepath.Join(l.dir, id+".json") }

// Put implements [Store].
func (l *Local) Put(ctx context.Context, r io.Reader, info Info) (ref Ref, err error) {
	id, err := l.opts.NextID()
	if err != nil {
		return Ref{}, err
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	tmp, err := os.CreateTemp(l.dir, ".put-*")
	if err != nil {
		return Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	n, err := CopyLimited(ctx, tmp, r, l.opts.Limits.For(info.MimeType), info.MimeType)
	if err != nil {
		return Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	// The run row that names the blob is committed after Put returns: the
	// bytes must be on disk by then.
	if err := tmp.Sync(); err != nil {
		return Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	meta, err := json.Marshal(localMeta{MimeType: info.MimeType, Filename: info.Filename})
	if err != nil {
		return Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	if err := writeFileAtomic(l.dir, l.meta(id), meta); err != nil {
		return Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	if err := os.Rename(tmp.Name(), l.path(id)); err != nil {
		_ = os.Remove(l.meta(id))
		return Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	return Ref{ID: id, URL: l.opts.URL(id), Size: n, MimeType: info.MimeType, Filename: info.Filename}, nil
}

// Open implements [Store].
func (l *Local) Open(_ context.Context, id string) (io.ReadCloser, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	f, err := os.Open(l.path(id))
	if err != nil {
		return nil, notFound(id, err)
	}
	return f, nil
}

// Stat implements [Store].
func (l *Local) Stat(_ context.Context, id string) (Ref, error) {
	if err := CheckID(id); err != nil {
		return Ref{}, err
	}
	info, err := os.Stat(l.path(id))
	if err != nil {
		return Ref{}, notFound(id, err)
	}
	ref := Ref{ID: id, URL: l.opts.URL(id), Size: info.Size()}
	data, err := os.ReadFile(l.meta(id))
	switch {
	case errors.Is(err, fs.ErrNotExist): // written by hand: no metadata
	case err != nil:
		return Ref{}, fmt.Errorf("media: stat blob %s: %w", id, err)
	default:
		var meta localMeta
		if err := json.Unmarshal(data, &meta); err != nil {
			return Ref{}, fmt.Errorf("media: stat blob %s: metadata: %w", id, err)
		}
		ref.MimeType, ref.Filename = meta.MimeType, meta.Filename
	}
	return ref, nil
}

// Delete implements [Store].
func (l *Local) Delete(_ context.Context, id string) error {
	if !ValidID(id) {
		return nil // no blob can have it
	}
	var errs []error
	for _, p := range []string{l.path(id), l.meta(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("media: delete blob %s: %w", id, err)
	}
	return nil
}

// Close implements [Store]; a directory holds nothing open.
func (l *Local) Close() error { return nil }

// notFound maps a missing file to [ErrNotFound].
func notFound(id string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("media blob %s: %w", id, ErrNotFound)
	}
	return fmt.Errorf("media blob %s: %w", id, err)
}

// writeFileAtomic writes data to a temporary file in dir and renames it to
// path.
func writeFileAtomic(dir, path string, data []byte) error {
	tmp, err := os.CreateTemp(dir, ".meta-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
