package blobstore

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agnogo/agnogo/media"
)

// fileParams are the query parameters of a file:// URL: those of
// gocloud.dev's fileblob, which served file:// before, that concern a media
// store.
var fileParams = []string{"create_dir", "dir_file_mode", "metadata", "no_tmp_dir", "prefix"}

// attrsExt ends the name of the file beside a blob that holds its
// attributes.
const attrsExt = ".attrs"

// fileBucket keeps objects as files under a directory, in the layout of
// gocloud.dev's fileblob: the object key is the file's path (escaped, see
// escapeFileKey), and <path>.attrs holds its attributes as JSON.
type fileBucket struct {
	dir string
	// dirMode is the mode of the directories a write creates.
	dirMode os.FileMode
	// skipAttrs writes no .attrs files (metadata=skip).
	skipAttrs bool
}

// fileAttrs is the content of an .attrs file, field for field what
// fileblob wrote and reads.
type fileAttrs struct {
	CacheControl       string            `json:"user.cache_control"`
	ContentDisposition string            `json:"user.content_disposition"`
	ContentEncoding    string            `json:"user.content_encoding"`
	ContentLanguage    string            `json:"user.content_language"`
	ContentType        string            `json:"user.content_type"`
	Metadata           map[string]string `json:"user.metadata"`
	MD5                []byte            `json:"md5"`
}

// openFileURL opens "file:///path" (see the package documentation).
func openFileURL(_ context.Context, u *url.URL, opts media.Options) (*Store, error) {
	bucket, prefix, err := openFileBucket(u)
	if err != nil {
		return nil, fmt.Errorf("media: file bucket %s: %w", u.Path, err)
	}
	return newStore(bucket, prefix, opts)
}

// openFileBucket reads the URL's parameters and checks its directory.
func openFileBucket(u *url.URL) (*fileBucket, string, error) {
	q := u.Query()
	prefix, err := bucketPrefix(q)
	if err != nil {
		return nil, "", err
	}
	bucket := &fileBucket{dirMode: 0o777}
	createDir := q.Get("create_dir") != ""
	if mode := q.Get("dir_file_mode"); mode != "" {
		value, err := strconv.ParseUint(mode, 0, 32)
		if err != nil {
			return nil, "", fmt.Errorf("invalid value for %q: %w", "dir_file_mode", err)
		}
		bucket.dirMode = os.FileMode(value)
	}
	if metadata, ok := q["metadata"]; ok {
		switch metadata[0] {
		case "":
		case "skip":
			bucket.skipAttrs = true
		default:
			return nil, "", fmt.Errorf("invalid value for %q: %q (want skip, or none)", "metadata", metadata[0])
		}
	}
	for _, name := range []string{"create_dir", "dir_file_mode", "metadata", "no_tmp_dir"} {
		q.Del(name)
	}
	if err := unknownParams(q, fileParams); err != nil {
		return nil, "", err
	}

	path := u.Path
	if u.Host == "." || os.PathSeparator != '/' {
		path = strings.TrimPrefix(path, "/")
	}
	if path == "" {
		return nil, "", errors.New("the URL names no directory: write file:///<path>")
	}
	dir, err := filepath.Abs(filepath.FromSlash(path))
	if err != nil {
		return nil, "", err
	}
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) && createDir {
		if err = os.MkdirAll(dir, bucket.dirMode); err == nil {
			info, err = os.Stat(dir)
		}
	}
	if err != nil {
		return nil, "", err
	}
	if !info.IsDir() {
		return nil, "", fmt.Errorf("%s is not a directory", dir)
	}
	bucket.dir = dir
	return bucket, prefix, nil
}

// path is the file holding the object key.
func (b *fileBucket) path(key string) (string, error) {
	path := filepath.Join(b.dir, escapeFileKey(key))
	if !strings.HasPrefix(path, b.dir+string(os.PathSeparator)) && b.dir != string(os.PathSeparator) {
		return "", fmt.Errorf("the key %q leaves the directory", key)
	}
	if strings.HasSuffix(path, attrsExt) {
		return "", fmt.Errorf("the key %q ends with %s, which names attribute files", key, attrsExt)
	}
	return path, nil
}

// newWriter implements [bucket]: the object is written to a temporary file
// beside its path, and renamed into place by commit, after its attributes.
func (b *fileBucket) newWriter(ctx context.Context, key string, attrs objectAttrs, _ int64) (objectWriter, error) {
	path, err := b.path(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), b.dirMode); err != nil {
		return nil, err
	}
	// Beside the blob, so the rename never crosses file systems; fileblob
	// named its temporary files the same way with no_tmp_dir.
	tmp, err := os.OpenFile(path+"."+media.NewID()+".tmp", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, err
	}
	w := &fileWriter{ctx: ctx, tmp: tmp, path: path, md5: md5.New()}
	if !b.skipAttrs {
		w.attrs = &fileAttrs{ContentType: attrs.contentType}
		if attrs.filename != "" {
			w.attrs.Metadata = map[string]string{filenameKey: attrs.filename}
		}
	}
	return w, nil
}

// open implements [bucket].
func (b *fileBucket) open(_ context.Context, key string) (io.ReadCloser, error) {
	path, err := b.path(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", media.ErrNotFound, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(err)
	}
	info, err := f.Stat()
	if err == nil && info.IsDir() {
		err = fs.ErrNotExist
	}
	if err != nil {
		_ = f.Close()
		return nil, fileError(err)
	}
	return f, nil
}

// attributes implements [bucket]. An object without an .attrs file (one
// put there by hand, or written with metadata=skip) is
// application/octet-stream, as fileblob reported it.
func (b *fileBucket) attributes(_ context.Context, key string) (objectAttrs, error) {
	path, err := b.path(key)
	if err != nil {
		return objectAttrs{}, fmt.Errorf("%w: %w", media.ErrNotFound, err)
	}
	info, err := os.Stat(path)
	if err == nil && info.IsDir() {
		err = fs.ErrNotExist
	}
	if err != nil {
		return objectAttrs{}, fileError(err)
	}
	data, err := os.ReadFile(path + attrsExt)
	if errors.Is(err, fs.ErrNotExist) {
		return objectAttrs{size: info.Size(), contentType: defaultContentType}, nil
	}
	if err != nil {
		return objectAttrs{}, err
	}
	var attrs fileAttrs
	if err := json.Unmarshal(data, &attrs); err != nil {
		return objectAttrs{}, fmt.Errorf("%s: %w", path+attrsExt, err)
	}
	return objectAttrs{size: info.Size(), contentType: attrs.ContentType, filename: attrs.Metadata[filenameKey]}, nil
}

// delete implements [bucket]: the file and its attributes.
func (b *fileBucket) delete(_ context.Context, key string) error {
	path, err := b.path(key)
	if err != nil {
		return nil // no object can have this key
	}
	var errs []error
	for _, name := range []string{path, path + attrsExt} {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// close implements [bucket]; a directory holds nothing open.
func (b *fileBucket) close() error { return nil }

// fileError marks a missing file as [media.ErrNotFound].
func fileError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", media.ErrNotFound, err)
	}
	return err
}

// fileWriter writes one object to its temporary file.
type fileWriter struct {
	ctx   context.Context
	tmp   *os.File
	path  string
	md5   hash.Hash
	attrs *fileAttrs // nil: write none
}

// Write appends p to the temporary file.
func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.tmp.Write(p)
	w.md5.Write(p[:n])
	return n, err
}

// commit implements [objectWriter]: the bytes are flushed to disk, the
// attributes written, and the file renamed to its path.
func (w *fileWriter) commit() (err error) {
	defer func() {
		if err != nil {
			_ = w.tmp.Close()
			_ = os.Remove(w.tmp.Name())
		}
	}()
	if err := w.ctx.Err(); err != nil {
		return err
	}
	// The run row that names the blob is committed after Put returns: the
	// bytes must be on disk by then.
	if err := w.tmp.Sync(); err != nil {
		return err
	}
	if err := w.tmp.Close(); err != nil {
		return err
	}
	if w.attrs != nil {
		w.attrs.MD5 = w.md5.Sum(nil)
		if err := writeAttrs(w.path+attrsExt, w.attrs); err != nil {
			return err
		}
	}
	if err := os.Rename(w.tmp.Name(), w.path); err != nil {
		_ = os.Remove(w.path + attrsExt)
		return err
	}
	return nil
}

// abort implements [objectWriter]: the temporary file is removed.
func (w *fileWriter) abort() error {
	_ = w.tmp.Close()
	if err := os.Remove(w.tmp.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// writeAttrs writes an .attrs file as fileblob did: JSON followed by a
// newline.
func writeAttrs(path string, attrs *fileAttrs) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(f).Encode(attrs); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}
