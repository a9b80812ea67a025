package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/run"
)

// maxFormMemory bounds the part of a multipart form held in memory; larger
// uploads spill to temporary files.
const maxFormMemory = 32 << 20

// maxBodyBytes bounds a run request's body.
const maxBodyBytes = 64 << 20

// form is a parsed run or continue form.
type form struct {
	values map[string][]string
	files  map[string][]*multipart.FileHeader
	// stored are the files of a form streamed into a media store, in the
	// order they came (see parseFormWith); files is then empty.
	stored []storedUpload
	issues []validationIssue
	used   map[string]bool
}

// parseForm reads a multipart or urlencoded form. A body of another type is
// read as an empty form (so required fields are reported missing).
func parseForm(w http.ResponseWriter, r *http.Request) (*form, error) {
	return parseFormWith(w, r, nil)
}

// parseFormWith is [parseForm] streaming uploads into store when there is
// one: a multipart body is then read part by part, each uploaded file (the
// field "files" or "files[]") copied into the store as it arrives, so a
// request costs the same memory whatever its files weigh. Each file is
// bounded by the store's limits instead of the body by maxBodyBytes.
func parseFormWith(w http.ResponseWriter, r *http.Request, store media.Store) (*form, error) {
	f := &form{values: map[string][]string{}, used: map[string]bool{}}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if store == nil || mediaType != "multipart/form-data" {
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	}
	var err error
	switch mediaType {
	case "multipart/form-data":
		if store != nil {
			err = f.streamMultipart(r, store)
			break
		}
		err = r.ParseMultipartForm(maxFormMemory)
		if r.MultipartForm != nil {
			for k, v := range r.MultipartForm.Value {
				f.values[k] = v
			}
			f.files = r.MultipartForm.File
		}
	case "application/x-www-form-urlencoded":
		err = r.ParseForm()
		for k, v := range r.PostForm {
			f.values[k] = v
		}
	default:
		err = r.ParseForm() // query parameters still count
	}
	for k, v := range r.URL.Query() {
		if _, set := f.values[k]; !set {
			f.values[k] = v
		}
	}
	var tooLarge *http.MaxBytesError
	var refused *uploadError
	switch {
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("request body larger than %d bytes", tooLarge.Limit)
	case errors.As(err, &refused), errors.Is(err, errMediaStore):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("malformed form body: %w", err)
	}
	f.checkText()
	return f, nil
}

// maxFormParts bounds the parts of a streamed multipart form, as
// net/http bounds those of a parsed one.
const maxFormParts = 1000

// streamMultipart reads a multipart body part by part: text fields into
// f.values (maxFormMemory in all), uploaded files into store (see
// storeUpload), other files skipped. On a refusal the files stored so far
// are deleted.
func (f *form) streamMultipart(r *http.Request, store media.Store) (err error) {
	defer func() {
		if err != nil {
			f.discardStored(r.Context(), store)
		}
	}()
	reader, err := r.MultipartReader()
	if err != nil {
		return err
	}
	textLeft := int64(maxFormMemory)
	for parts := 1; ; parts++ {
		part, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if parts > maxFormParts {
			_ = part.Close()
			return &uploadError{status: http.StatusRequestEntityTooLarge,
				detail: fmt.Sprintf("the form has more than %d parts; send fewer files or fields", maxFormParts)}
		}
		err = f.streamPart(r.Context(), part, store, &textLeft)
		_ = part.Close()
		if err != nil {
			return err
		}
	}
}

// streamPart reads one part of a streamed form.
func (f *form) streamPart(ctx context.Context, part *multipart.Part, store media.Store, textLeft *int64) error {
	name := part.FormName()
	if name == "" {
		return nil
	}
	if part.FileName() == "" {
		value, err := io.ReadAll(io.LimitReader(part, *textLeft+1))
		if err != nil {
			return err
		}
		if *textLeft -= int64(len(value)); *textLeft < 0 {
			return &uploadError{status: http.StatusRequestEntityTooLarge,
				detail: fmt.Sprintf("the form's text fields are larger than %s in all; upload large content as a file", media.FormatBytes(maxFormMemory))}
		}
		f.values[name] = append(f.values[name], string(value))
		return nil
	}
	if name != uploadField && name != uploadField+"[]" {
		return nil // a file under another name is not an upload of the run
	}
	if p := textProblem(name + part.FileName()); p != "" {
		f.issues = append(f.issues, textIssue([]string{"body", name}, "file name "+p))
		return nil
	}
	upload, err := storeUpload(ctx, store, part)
	if err != nil {
		return err
	}
	f.stored = append(f.stored, upload)
	return nil
}

// discardStored deletes the files a refused form stored.
func (f *form) discardStored(ctx context.Context, store media.Store) {
	for _, upload := range f.stored {
		_ = store.Delete(context.WithoutCancel(ctx), upload.ref.ID) // an orphan blob only costs space
	}
	f.stored = nil
}

// checkText reports, as issues, fields whose name, value or uploaded file
// name is text a database cannot store (see textProblem).
func (f *form) checkText() {
	for name, values := range f.values {
		if p := textProblem(name); p != "" {
			f.issues = append(f.issues, textIssue([]string{"body"}, "field name "+p))
			continue
		}
		for _, v := range values {
			if p := textProblem(v); p != "" {
				f.issues = append(f.issues, textIssue([]string{"body", name}, p))
				break
			}
		}
	}
	for name, files := range f.files {
		for _, file := range files {
			if p := textProblem(name + file.Filename); p != "" {
				f.issues = append(f.issues, textIssue([]string{"body", name}, "file name "+p))
				break
			}
		}
	}
}

// str returns a field's first value.
func (f *form) str(name string) string {
	f.used[name] = true
	if v := f.values[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// has reports whether a field was sent.
func (f *form) has(name string) bool {
	_, ok := f.values[name]
	return ok
}

// required returns a field that must be present and non-empty.
func (f *form) required(name string) string {
	v := f.str(name)
	if strings.TrimSpace(v) == "" {
		f.issues = append(f.issues, missingField(name))
	}
	return v
}

// boolean reads a true/false field, with a default when absent.
func (f *form) boolean(name string, def bool) bool {
	v := strings.TrimSpace(f.str(name))
	if v == "" {
		return def
	}
	switch strings.ToLower(v) {
	case "true", "1", "yes", "on":
		return true
	case "false", "0", "no", "off":
		return false
	}
	f.issues = append(f.issues, invalidField(name, fmt.Sprintf("Input should be a valid boolean, unable to interpret %q", v)))
	return def
}

// integer reads an integer field.
func (f *form) integer(name string, def int) int {
	v := strings.TrimSpace(f.str(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		f.issues = append(f.issues, invalidField(name, fmt.Sprintf("Input should be a valid integer, unable to parse %q", v)))
		return def
	}
	return n
}

// jsonObject decodes a field holding a JSON object.
func (f *form) jsonObject(name string) map[string]any {
	v := strings.TrimSpace(f.str(name))
	if v == "" {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(v), &obj); err != nil || obj == nil {
		f.issues = append(f.issues, invalidField(name, "Value must be a JSON object"))
		return nil
	}
	return obj
}

// jsonInto decodes a field holding JSON into v.
func (f *form) jsonInto(name string, v any, what string) {
	raw := strings.TrimSpace(f.str(name))
	if raw == "" {
		return
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		f.issues = append(f.issues, invalidField(name, "Value must be "+what+": "+err.Error()))
	}
}

// noServerPaths refuses media that name a file by its path: over HTTP a
// path would be read on the server, so a client could make an agent read
// any file the server can. Upload the file, or send its content or URL.
func (f *form) noServerPaths(in *run.Input) {
	refuse := func(field string, i int, path string) {
		if path != "" {
			f.issues = append(f.issues, invalidField(field, fmt.Sprintf(
				"item %d names a file path (%q): files on the server cannot be named over HTTP; upload the file, or send its content or url", i, path)))
		}
	}
	for i, m := range in.Images {
		refuse("images", i, m.Filepath)
	}
	for i, m := range in.Audios {
		refuse("audio", i, m.Filepath)
	}
	for i, m := range in.Videos {
		refuse("videos", i, m.Filepath)
	}
	for i, m := range in.Files {
		refuse("input_files", i, m.Filepath)
	}
}

// uploads returns the files uploaded in a multipart field ("name" or
// "name[]"). A text value sent under that name is not a file and is ignored.
func (f *form) uploads(name string) []*multipart.FileHeader {
	f.used[name], f.used[name+"[]"] = true, true
	return append(append([]*multipart.FileHeader(nil), f.files[name]...), f.files[name+"[]"]...)
}

// storedUploads returns the files of a streamed form, kept in the media
// store; like [form.uploads] it marks the upload field read.
func (f *form) storedUploads() []storedUpload {
	f.used[uploadField], f.used[uploadField+"[]"] = true, true
	return f.stored
}

// outputSchema reads a field holding a JSON Schema for a structured answer:
// a JSON object whose type is "object".
func (f *form) outputSchema(name string) json.RawMessage {
	v := strings.TrimSpace(f.str(name))
	if v == "" {
		return nil
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(v), &schema); err != nil || schema == nil {
		f.issues = append(f.issues, invalidField(name, "Value must be a JSON Schema object"))
		return nil
	}
	if schema["type"] != "object" {
		f.issues = append(f.issues, invalidField(name, `the schema must describe an object ("type": "object"); wrap an array or a scalar in an object property`))
		return nil
	}
	return json.RawMessage(v)
}

// extra returns the fields no one read, which are passed through to the run.
func (f *form) extra() map[string]any {
	var out map[string]any
	for k, v := range f.values {
		if f.used[k] || len(v) == 0 {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v[0]
	}
	return out
}
