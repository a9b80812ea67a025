package agentos

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/run"
)

// Uploaded files on run creation (agentos-api.md §5, step 2): each part of
// the multipart field "files" is classified by its content type — or by its
// extension when the browser sent none or application/octet-stream — as an
// image, audio, video or document, and becomes media on the run's input.
// Anything else is refused with 400 before the run starts.

// mediaKind is what an upload is classified as.
type mediaKind int

const (
	kindUnsupported mediaKind = iota
	kindImage
	kindAudio
	kindVideo
	kindDocument
)

// uploadTypes maps the content types AgentOS accepts to their kind.
var uploadTypes = map[string]mediaKind{
	"image/png": kindImage, "image/jpeg": kindImage, "image/jpg": kindImage, "image/gif": kindImage,
	"image/webp": kindImage, "image/bmp": kindImage, "image/tiff": kindImage, "image/tif": kindImage,
	"image/avif": kindImage, "image/heic": kindImage, "image/heif": kindImage,

	"audio/wav": kindAudio, "audio/wave": kindAudio, "audio/mp3": kindAudio, "audio/mpeg": kindAudio,
	"audio/ogg": kindAudio, "audio/mp4": kindAudio, "audio/m4a": kindAudio, "audio/aac": kindAudio,
	"audio/flac": kindAudio,

	"video/x-flv": kindVideo, "video/quicktime": kindVideo, "video/mpeg": kindVideo, "video/mpegs": kindVideo,
	"video/mpgs": kindVideo, "video/mpg": kindVideo, "video/mp4": kindVideo, "video/webm": kindVideo,
	"video/wmv": kindVideo, "video/3gpp": kindVideo,

	"application/pdf": kindDocument, "application/json": kindDocument, "application/x-javascript": kindDocument,
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document":   kindDocument,
	"application/vnd.openxmlformats-officedocument.presentationml.presentation": kindDocument,
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":         kindDocument,
	"application/msword": kindDocument, "application/vnd.ms-powerpoint": kindDocument,
	"application/vnd.ms-excel": kindDocument, "application/vnd.ms-outlook": kindDocument,
	"text/javascript": kindDocument, "application/x-python": kindDocument, "text/x-python": kindDocument,
	"text/plain": kindDocument, "text/html": kindDocument, "text/css": kindDocument, "text/markdown": kindDocument,
	"text/csv": kindDocument, "text/xml": kindDocument, "text/rtf": kindDocument,
}

// uploadExtensions gives the content type of a file whose upload carried no
// usable one, by extension.
var uploadExtensions = map[string]string{
	"pdf": "application/pdf", "json": "application/json", "js": "text/javascript",
	"docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"doc":  "application/msword",
	"pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	"ppt":  "application/vnd.ms-powerpoint",
	"xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"xls":  "application/vnd.ms-excel", "msg": "application/vnd.ms-outlook",
	"py": "text/x-python", "txt": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css",
	"md": "text/markdown", "markdown": "text/markdown", "csv": "text/csv", "xml": "text/xml", "rtf": "text/rtf",
	"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
	"bmp": "image/bmp", "tiff": "image/tiff", "tif": "image/tiff", "avif": "image/avif", "heic": "image/heic",
	"heif": "image/heif",
	"wav":  "audio/wav", "mp3": "audio/mpeg", "ogg": "audio/ogg", "m4a": "audio/mp4", "aac": "audio/aac",
	"flac": "audio/flac",
	"flv":  "video/x-flv", "mov": "video/quicktime", "mpeg": "video/mpeg", "mpg": "video/mpeg", "mp4": "video/mp4",
	"webm": "video/webm", "wmv": "video/wmv", "3gp": "video/3gpp",
}

// maxUploadBytes bounds one uploaded file.
const maxUploadBytes = 32 << 20

// classifyUpload returns an upload's kind and the content type it is
// recorded with.
func classifyUpload(filename, contentType string) (mediaKind, string) {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mediaType = ""
	}
	mediaType = strings.ToLower(mediaType)
	if kind, ok := uploadTypes[mediaType]; ok {
		return kind, mediaType
	}
	if mediaType != "" && mediaType != "application/octet-stream" {
		return kindUnsupported, mediaType
	}
	if byExt, ok := uploadExtensions[extension(filename)]; ok {
		return uploadTypes[byExt], byExt
	}
	return kindUnsupported, mediaType
}

// extension is a file name's extension, lower case, without the dot.
func extension(filename string) string {
	return strings.ToLower(strings.TrimPrefix(path.Ext(filename), "."))
}

// unsupportedUpload refuses a file of a type AgentOS does not take.
func unsupportedUpload(filename, mimeType string) error {
	return fmt.Errorf("Unsupported file type: %s (%s); send an image, audio, video or document (PDF, text, Office)", filename, cmp.Or(mimeType, "no content type"))
}

// uploadFormat is an upload's format: its extension, else its MIME subtype.
func uploadFormat(filename, mimeType string) string {
	if format := extension(filename); format != "" {
		return format
	}
	return mimeType[strings.LastIndexByte(mimeType, '/')+1:]
}

// addUploads reads the uploaded files onto in, or says which one cannot be
// used.
func addUploads(in *run.Input, files []*multipart.FileHeader) error {
	for _, fh := range files {
		kind, mimeType := classifyUpload(fh.Filename, fh.Header.Get("Content-Type"))
		if kind == kindUnsupported {
			return unsupportedUpload(fh.Filename, mimeType)
		}
		content, err := readUpload(fh)
		if err != nil {
			return err
		}
		format := uploadFormat(fh.Filename, mimeType)
		switch kind {
		case kindImage:
			in.Images = append(in.Images, run.Image{ID: newID(), Content: content, Format: format, MimeType: mimeType})
		case kindAudio:
			in.Audios = append(in.Audios, run.Audio{ID: newID(), Content: content, Format: format, MimeType: mimeType})
		case kindVideo:
			in.Videos = append(in.Videos, run.Video{ID: newID(), Content: content, Format: format, MimeType: mimeType})
		case kindDocument:
			in.Files = append(in.Files, run.File{ID: newID(), Content: content, Format: format, MimeType: mimeType,
				Filename: fh.Filename, Size: int64(len(content))})
		}
	}
	return nil
}

// readUpload reads one uploaded file, refusing empty and oversized ones.
func readUpload(fh *multipart.FileHeader) ([]byte, error) {
	if fh.Size == 0 {
		return nil, fmt.Errorf("Empty file: %s", fh.Filename)
	}
	if fh.Size > maxUploadBytes {
		return nil, fmt.Errorf("file %s is %d bytes; the limit is %d bytes per file", fh.Filename, fh.Size, maxUploadBytes)
	}
	f, err := fh.Open()
	if err != nil {
		return nil, fmt.Errorf("file %s could not be read: %w", fh.Filename, err)
	}
	defer f.Close()
	content, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("file %s could not be read: %w", fh.Filename, err)
	}
	return content, nil
}

// With a media store (Config.Media), uploads are not read into memory:
// streamMultipart hands each file part to storeUpload, which copies it into
// the store as it arrives, and the run's input gets references
// (addStoredUploads). The store's limits bound each file; a larger one is
// refused with 413.

// uploadField is the multipart field of a run's uploaded files.
const uploadField = "files"

// storedUpload is an uploaded file kept in the media store.
type storedUpload struct {
	kind     mediaKind
	mimeType string
	filename string
	ref      media.Ref
}

// uploadError refuses a request because of its form: the status and the
// detail that says what to fix.
type uploadError struct {
	status int
	detail string
}

// Error returns the detail.
func (e *uploadError) Error() string { return e.detail }

// errMediaStore marks a failure of the media store itself, which is the
// server's (500), not the client's.
var errMediaStore = errors.New("media store")

// storeUpload classifies one uploaded file and copies it into store.
func storeUpload(ctx context.Context, store media.Store, part *multipart.Part) (storedUpload, error) {
	filename := part.FileName()
	kind, mimeType := classifyUpload(filename, part.Header.Get("Content-Type"))
	if kind == kindUnsupported {
		return storedUpload{}, &uploadError{status: http.StatusBadRequest, detail: unsupportedUpload(filename, mimeType).Error()}
	}
	body := &bodyReader{r: part}
	buffered := bufio.NewReader(body)
	if _, err := buffered.Peek(1); err != nil {
		if errors.Is(err, io.EOF) {
			return storedUpload{}, &uploadError{status: http.StatusBadRequest, detail: "Empty file: " + filename}
		}
		return storedUpload{}, fmt.Errorf("file %s: %w", filename, err)
	}
	ref, err := store.Put(ctx, buffered, media.Info{MimeType: mimeType, Filename: filename})
	var tooLarge *media.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return storedUpload{}, &uploadError{status: http.StatusRequestEntityTooLarge, detail: fmt.Sprintf(
			"file %s is larger than the limit of %s for %s uploads; send a smaller file, or raise the server's max_upload_bytes",
			filename, media.FormatBytes(tooLarge.Limit), mimeType)}
	case body.err != nil:
		return storedUpload{}, fmt.Errorf("file %s: %w", filename, body.err) // the client's body broke off
	case err != nil && ctx.Err() != nil:
		return storedUpload{}, fmt.Errorf("file %s: %w", filename, context.Cause(ctx)) // the client left
	case err != nil:
		return storedUpload{}, fmt.Errorf("%w: file %s: %w", errMediaStore, filename, err)
	}
	return storedUpload{kind: kind, mimeType: mimeType, filename: filename, ref: ref}, nil
}

// bodyReader remembers the error of reading the request body, to tell a
// client's broken upload from a failing store.
type bodyReader struct {
	r   io.Reader
	err error
}

// Read reads the body, keeping a failure other than its end.
func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

// addStoredUploads puts references to the stored uploads on in: media_id,
// the blob's public URL or media://, size and file name, no content.
func addStoredUploads(in *run.Input, uploads []storedUpload) {
	for _, u := range uploads {
		format := uploadFormat(u.filename, u.mimeType)
		url := cmp.Or(u.ref.URL, run.MediaURL(u.ref.ID))
		switch u.kind {
		case kindImage:
			in.Images = append(in.Images, run.Image{ID: newID(), MediaID: u.ref.ID, URL: url, Format: format, MimeType: u.mimeType,
				Filename: u.filename, Size: u.ref.Size})
		case kindAudio:
			in.Audios = append(in.Audios, run.Audio{ID: newID(), MediaID: u.ref.ID, URL: url, Format: format, MimeType: u.mimeType,
				Filename: u.filename, Size: u.ref.Size})
		case kindVideo:
			in.Videos = append(in.Videos, run.Video{ID: newID(), MediaID: u.ref.ID, URL: url, Format: format, MimeType: u.mimeType,
				Filename: u.filename, Size: u.ref.Size})
		case kindDocument:
			in.Files = append(in.Files, run.File{ID: newID(), MediaID: u.ref.ID, URL: url, Format: format, MimeType: u.mimeType,
				Filename: u.filename, Size: u.ref.Size})
		}
	}
}
