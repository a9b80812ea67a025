package config

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agnogo/agnogo/media"
	_ "github.com/agnogo/agnogo/media/blobstore" // s3://, gs://, azblob://, file:// for media_storage
	"github.com/agnogo/agnogo/storage/dburl"
)

// The media keys (media_storage, max_upload_bytes,
// max_upload_bytes_per_type): where the images, audio, video and files of
// runs are kept, and how large an upload may be. [File.Build] opens the
// store ([OS.Media]) and gives it to every native agent and to the HTTP
// server ([OS.Server]), so uploads stream into it and run rows keep
// references instead of bytes (see docs/media.md).

// DefaultMaxUploadBytes is max_upload_bytes when not set: 32 MiB per file.
const DefaultMaxUploadBytes = media.DefaultMaxBytes

// mediaDirName is the directory of the default media store, in the data
// directory.
const mediaDirName = "media"

// mediaLimits is the size limits of the media store as media takes them:
// a 0 of the file (no bound) becomes negative.
func (f *File) mediaLimits() media.Limits {
	unbounded := func(n int64) int64 {
		if n == 0 {
			return -1
		}
		return n
	}
	limits := media.Limits{MaxBytes: unbounded(f.MaxUploadBytes)}
	if len(f.MaxUploadBytesPerType) > 0 {
		limits.PerType = make(map[string]int64, len(f.MaxUploadBytesPerType))
		for mimeType, n := range f.MaxUploadBytesPerType {
			limits.PerType[mimeType] = unbounded(n)
		}
	}
	return limits
}

// dataDir is where agnogo keeps its files when the config names no place
// for them: the directory of the SQLite database file, else (PostgreSQL)
// the working directory.
func dataDir(dbURL string) string {
	if target, err := dburl.Parse(dbURL); err == nil && target.Kind == dburl.SQLite {
		return filepath.Dir(target.Path)
	}
	return "."
}

// openMedia opens the media store of the file for the database dbURL. It
// returns the store, where it keeps its blobs (for messages), and a
// warning when the default store is unfit for the database.
func (f *File) openMedia(ctx context.Context, dbURL string) (store media.Store, where, warning string, err error) {
	store, err = media.Open(ctx, f.MediaStorage, media.WithDataDir(dataDir(dbURL)), media.WithLimits(f.mediaLimits()))
	if err != nil {
		return nil, "", "", &Error{Source: f.Source, Line: f.mediaStorageLine, Message: "media_storage: " + err.Error()}
	}
	where = mediaLocation(f.MediaStorage)
	if local, ok := store.(*media.Local); ok {
		where = local.Dir()
	}
	if target, err := dburl.Parse(dbURL); err == nil && target.Kind == dburl.Postgres && f.MediaStorage == "" {
		warning = fmt.Sprintf("media_storage is not set: uploads are kept in %s on this machine, while the database (PostgreSQL) "+
			"may be shared by other servers, which cannot read them — a background run or a session continued there fails on its media; "+
			"set media_storage to a bucket (s3://, gs://, azblob://) or a directory every server mounts", where)
	}
	return store, where, warning, nil
}

// mediaLocation names a media_storage value for logs: a path as it is, a
// URL without its query parameters and credentials.
func mediaLocation(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || len(u.Scheme) < 2 {
		return raw
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// decodeMediaStorage reads media_storage: a directory path, or a URL whose
// scheme a media store is registered for.
func (d *decoder) decodeMediaStorage(node *yaml.Node, file *File) {
	file.MediaStorage = strings.TrimSpace(d.str(node, "media_storage"))
	file.mediaStorageLine = node.Line
	if file.MediaStorage == "" {
		return
	}
	u, err := url.Parse(file.MediaStorage)
	if err != nil || len(u.Scheme) < 2 {
		return // a path
	}
	if !slices.Contains(media.Schemes(), strings.ToLower(u.Scheme)) {
		d.errorf(node, "media_storage: URL scheme %q is not %s; or give a directory path", u.Scheme, strings.Join(media.Schemes(), ", "))
	}
}

// decodeUploadLimits reads max_upload_bytes_per_type: a mapping from a
// MIME type (video/mp4) or a top-level type (video, video/*) to a size.
func (d *decoder) decodeUploadLimits(node *yaml.Node) map[string]int64 {
	fields := d.fields(node, "max_upload_bytes_per_type")
	if len(fields) == 0 {
		return nil
	}
	limits := make(map[string]int64, len(fields))
	for _, f := range fields {
		mimeType := strings.ToLower(f.name())
		if err := (media.Limits{PerType: map[string]int64{mimeType: 1}}).Validate(); err != nil {
			d.errorf(f.key, "max_upload_bytes_per_type: %q is not a MIME type (such as video/mp4) or a top-level type (such as video)", f.name())
			continue
		}
		limits[mimeType] = d.byteSize(f.value, label(f.name(), "max_upload_bytes_per_type"))
	}
	return limits
}

// sizePattern is a size written with a unit: 200MB, 1.5 GiB, 512 KiB.
var sizePattern = regexp.MustCompile(`(?i)^([0-9]+(?:\.[0-9]+)?)\s*(b|kb|mb|gb|tb|kib|mib|gib|tib)$`)

// sizeUnits are the multipliers of the units sizePattern takes: KB, MB, GB
// and TB are powers of 1000, KiB, MiB, GiB and TiB powers of 1024.
var sizeUnits = map[string]float64{
	"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// byteSize reads a size in bytes: a whole number, or a number with a unit
// (32MiB, 200 MB, 1.5GiB). It is at least 0.
func (d *decoder) byteSize(node *yaml.Node, what string) int64 {
	node, ok := d.scalar(node, what, "a size in bytes")
	if !ok {
		return 0
	}
	if node.ShortTag() == "!!int" {
		var value int64
		if node.Decode(&value) != nil || value < 0 {
			d.errorf(node, "%s: want a size of at least 0 bytes, got %s", what, node.Value)
			return 0
		}
		return value
	}
	m := sizePattern.FindStringSubmatch(strings.TrimSpace(node.Value))
	if m == nil {
		d.errorf(node, "%s: want a size in bytes, such as 33554432, 32MiB or 200MB; got %s", what, kindName(node))
		return 0
	}
	number, err := strconv.ParseFloat(m[1], 64)
	bytes := number * sizeUnits[strings.ToLower(m[2])]
	if err != nil || bytes >= math.MaxInt64 {
		d.errorf(node, "%s: %s is too large", what, kindName(node))
		return 0
	}
	return int64(bytes)
}
