package run

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Media kept in a media store: a medium whose MediaID is set and whose
// Content is empty is a reference — its bytes are a blob in the store (see
// package media), read back only for the model call that needs them. The
// reference keeps the fields Agno clients read (id, mime_type, format,
// filename, size, and url: the blob's public URL when the store serves one,
// else [MediaURL]) and adds media_id, which Agno clients ignore. A run row then holds a few hundred
// bytes per medium instead of its base64.

// MediaURLScheme is the scheme of the url a stored medium carries when its
// store serves no public URL: media://<media_id>. It keeps url set for
// clients that want one of url and content on every medium (Agno's
// validators do); the agent gives a model the bytes instead.
const MediaURLScheme = "media"

// MediaURL returns the media:// placeholder URL of a stored medium.
func MediaURL(mediaID string) string { return MediaURLScheme + "://" + mediaID }

// Image is a picture given to or produced by a run (Agno's media.Image). One of
// URL, Filepath, Content or MediaID locates it. Content travels
// base64-encoded.
type Image struct {
	ID string `json:"id,omitempty"`
	// MediaID names the image's blob in the media store; see [Image.Stored].
	MediaID        string `json:"media_id,omitempty"`
	URL            string `json:"url,omitempty"`
	Filepath       string `json:"filepath,omitempty"`
	Format         string `json:"format,omitempty"`    // e.g. "png", "jpeg"
	MimeType       string `json:"mime_type,omitempty"` // e.g. "image/png"
	Detail         string `json:"detail,omitempty"`    // OpenAI vision detail: "low", "high", "auto"
	OriginalPrompt string `json:"original_prompt,omitempty"`
	RevisedPrompt  string `json:"revised_prompt,omitempty"`
	AltText        string `json:"alt_text,omitempty"`
	// Filename and Size describe an uploaded image.
	Filename string `json:"filename,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Content  []byte `json:"content,omitempty"`
}

// Stored reports whether the image is a reference to a blob of the media
// store rather than carrying its bytes.
func (img Image) Stored() bool { return img.MediaID != "" && len(img.Content) == 0 }

// UnmarshalJSON reads content leniently: text that is not valid base64 is kept
// as its UTF-8 bytes, as Agno's from_base64 does.
func (img *Image) UnmarshalJSON(data []byte) error {
	type plain Image
	aux := struct {
		*plain
		Content *string `json:"content"`
	}{plain: (*plain)(img)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	img.Content = decodeMediaContent(aux.Content)
	return nil
}

// Audio is sound given to or produced by a run (Agno's media.Audio).
type Audio struct {
	ID string `json:"id,omitempty"`
	// MediaID names the clip's blob in the media store; see [Audio.Stored].
	MediaID    string  `json:"media_id,omitempty"`
	URL        string  `json:"url,omitempty"`
	Filepath   string  `json:"filepath,omitempty"`
	Format     string  `json:"format,omitempty"`    // e.g. "mp3", "wav"
	MimeType   string  `json:"mime_type,omitempty"` // e.g. "audio/mpeg"
	Duration   float64 `json:"duration,omitempty"`  // seconds
	SampleRate int     `json:"sample_rate,omitempty"`
	Channels   int     `json:"channels,omitempty"`
	Transcript string  `json:"transcript,omitempty"`
	ExpiresAt  int64   `json:"expires_at,omitempty"` // epoch seconds, for temporary URLs
	// Filename and Size describe an uploaded clip.
	Filename string `json:"filename,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Content  []byte `json:"content,omitempty"`
}

// Stored reports whether the clip is a reference to a blob of the media
// store rather than carrying its bytes.
func (a Audio) Stored() bool { return a.MediaID != "" && len(a.Content) == 0 }

// UnmarshalJSON reads content leniently, like [Image.UnmarshalJSON].
func (a *Audio) UnmarshalJSON(data []byte) error {
	type plain Audio
	aux := struct {
		*plain
		Content *string `json:"content"`
	}{plain: (*plain)(a)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	a.Content = decodeMediaContent(aux.Content)
	return nil
}

// Video is a clip given to or produced by a run (Agno's media.Video).
type Video struct {
	ID string `json:"id,omitempty"`
	// MediaID names the clip's blob in the media store; see [Video.Stored].
	MediaID        string  `json:"media_id,omitempty"`
	URL            string  `json:"url,omitempty"`
	Filepath       string  `json:"filepath,omitempty"`
	Format         string  `json:"format,omitempty"`    // e.g. "mp4"
	MimeType       string  `json:"mime_type,omitempty"` // e.g. "video/mp4"
	Duration       float64 `json:"duration,omitempty"`  // seconds
	Width          int     `json:"width,omitempty"`
	Height         int     `json:"height,omitempty"`
	FPS            float64 `json:"fps,omitempty"`
	ETA            string  `json:"eta,omitempty"` // estimated generation time
	OriginalPrompt string  `json:"original_prompt,omitempty"`
	RevisedPrompt  string  `json:"revised_prompt,omitempty"`
	// Filename and Size describe an uploaded clip.
	Filename string `json:"filename,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Content  []byte `json:"content,omitempty"`
}

// Stored reports whether the clip is a reference to a blob of the media
// store rather than carrying its bytes.
func (v Video) Stored() bool { return v.MediaID != "" && len(v.Content) == 0 }

// UnmarshalJSON reads content leniently, like [Image.UnmarshalJSON].
func (v *Video) UnmarshalJSON(data []byte) error {
	type plain Video
	aux := struct {
		*plain
		Content *string `json:"content"`
	}{plain: (*plain)(v)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	v.Content = decodeMediaContent(aux.Content)
	return nil
}

// File is a document given to or produced by a run (Agno's media.File).
//
// Unlike the other media, a text/* file's content travels as plain text, not
// base64, because that is how Agno serialises it.
type File struct {
	ID string `json:"id,omitempty"`
	// MediaID names the document's blob in the media store; see
	// [File.Stored].
	MediaID  string `json:"media_id,omitempty"`
	URL      string `json:"url,omitempty"`
	Filepath string `json:"filepath,omitempty"`
	Content  []byte `json:"content,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	FileType string `json:"file_type,omitempty"`
	Filename string `json:"filename,omitempty"`
	Size     int64  `json:"size,omitempty"`
	// External is a provider-side file handle (e.g. an uploaded Gemini file).
	External any    `json:"external,omitempty"`
	Format   string `json:"format,omitempty"` // e.g. "pdf", "csv"
	Name     string `json:"name,omitempty"`
}

// Stored reports whether the document is a reference to a blob of the media
// store rather than carrying its bytes.
func (f File) Stored() bool { return f.MediaID != "" && len(f.Content) == 0 }

// isText reports whether f's content is sent as text rather than base64.
func (f File) isText() bool { return strings.HasPrefix(f.MimeType, "text/") }

// fileWire is the JSON form of a [File], content as text.
type fileWire struct {
	ID       string  `json:"id,omitempty"`
	MediaID  string  `json:"media_id,omitempty"`
	URL      string  `json:"url,omitempty"`
	Filepath string  `json:"filepath,omitempty"`
	Content  *string `json:"content,omitempty"`
	MimeType string  `json:"mime_type,omitempty"`
	FileType string  `json:"file_type,omitempty"`
	Filename string  `json:"filename,omitempty"`
	Size     int64   `json:"size,omitempty"`
	External any     `json:"external,omitempty"`
	Format   string  `json:"format,omitempty"`
	Name     string  `json:"name,omitempty"`
}

// MarshalJSON writes text/* content as a string and anything else as base64.
func (f File) MarshalJSON() ([]byte, error) {
	wire := fileWire{
		ID: f.ID, MediaID: f.MediaID, URL: f.URL, Filepath: f.Filepath, MimeType: f.MimeType, FileType: f.FileType,
		Filename: f.Filename, Size: f.Size, External: f.External, Format: f.Format, Name: f.Name,
	}
	if len(f.Content) > 0 {
		if f.isText() && utf8.Valid(f.Content) {
			wire.Content = new(string(f.Content))
		} else {
			wire.Content = new(base64.StdEncoding.EncodeToString(f.Content))
		}
	}
	return marshalJSON(wire)
}

// UnmarshalJSON reads text/* content as text and anything else as base64,
// falling back to the raw text when it is not valid base64.
func (f *File) UnmarshalJSON(data []byte) error {
	var wire fileWire
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*f = File{
		ID: wire.ID, MediaID: wire.MediaID, URL: wire.URL, Filepath: wire.Filepath, MimeType: wire.MimeType, FileType: wire.FileType,
		Filename: wire.Filename, Size: wire.Size, External: wire.External, Format: wire.Format, Name: wire.Name,
	}
	if wire.Content != nil {
		if f.isText() {
			f.Content = []byte(*wire.Content)
		} else {
			f.Content = decodeMediaContent(wire.Content)
		}
	}
	return nil
}

// decodeMediaContent turns the content string of a stored medium back into
// bytes: base64 when it decodes, the text itself otherwise.
func decodeMediaContent(text *string) []byte {
	if text == nil || *text == "" {
		return nil
	}
	if decoded, err := base64.StdEncoding.DecodeString(*text); err == nil {
		return decoded
	}
	return []byte(*text)
}

// StoredMedia reports whether any medium of the message is a reference to
// the media store (see [Image.Stored]), whose bytes must be read back before
// the message goes to a model.
func (m *Message) StoredMedia() bool {
	for _, img := range m.Images {
		if img.Stored() {
			return true
		}
	}
	for _, a := range m.Audio {
		if a.Stored() {
			return true
		}
	}
	for _, v := range m.Videos {
		if v.Stored() {
			return true
		}
	}
	for _, f := range m.Files {
		if f.Stored() {
			return true
		}
	}
	return false
}

// InlineMedia reports whether any medium of the input carries its bytes
// (Content), which a media store would keep instead.
func (in *Input) InlineMedia() bool {
	if in == nil {
		return false
	}
	for _, img := range in.Images {
		if len(img.Content) > 0 {
			return true
		}
	}
	for _, a := range in.Audios {
		if len(a.Content) > 0 {
			return true
		}
	}
	for _, v := range in.Videos {
		if len(v.Content) > 0 {
			return true
		}
	}
	for _, f := range in.Files {
		if len(f.Content) > 0 {
			return true
		}
	}
	return false
}
