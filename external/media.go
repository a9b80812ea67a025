package external

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agnogo/agnogo/run"
)

// ErrUnsupportedMedia: an attachment an external agent cannot take — audio
// or video, or a file that cannot be staged safely. Nothing was started and
// nothing is left on disk. AgentOS answers it with HTTP 400.
var ErrUnsupportedMedia = run.ErrUnsupportedMedia

// UploadsDir is where a run's attachments are staged, below the agent's
// working directory: <cwd>/.agnogo/uploads/<run_id>/.
const UploadsDir = ".agnogo/uploads"

// maxNameLength bounds a staged file's name.
const maxNameLength = 120

// StagedFile is one attachment given to an external agent: a file written
// for it to read, or a remote reference it is told about.
type StagedFile struct {
	// Path is the file's absolute path; empty for a remote reference.
	Path string
	// URL is the remote reference of an attachment given by URL only,
	// which is not downloaded.
	URL string
	// MimeType is the attachment's media type, when known.
	MimeType string
	// Size is the staged file's size in bytes.
	Size int64
}

// Staging is a run's staged attachments. [Staging.Prompt] tells the agent
// about them; [Staging.Remove] deletes them after the run.
type Staging struct {
	// Dir is the run's uploads directory.
	Dir string
	// Files are the attachments, in the order they were given.
	Files []StagedFile

	root    string   // the working directory
	created []string // files and directories created, in order
}

// Stage writes a run's images and files under
// <cwd>/.agnogo/uploads/<run_id>/ for an external agent to read. It returns
// nil when the run has no attachments. Audio and video are refused, and so
// is anything that could escape the uploads directory: a name is sanitised
// (characters outside [A-Za-z0-9._-] become _, leading and trailing . and _
// are stripped, at most 120 characters, "file" when nothing is left) and
// made unique with -2, -3… suffixes; files are created exclusively, never
// through a symlink; a symlink on the uploads path, or a source path that is
// a symlink or not a regular file, is refused. Every refusal wraps
// [ErrUnsupportedMedia], and a failed staging removes what it wrote.
func Stage(cwd, runID string, in *run.Input) (*Staging, error) {
	if in == nil {
		return nil, nil
	}
	if len(in.Audios) > 0 || len(in.Videos) > 0 {
		return nil, fmt.Errorf("%w: external agents take images and files; audio and video cannot be attached", ErrUnsupportedMedia)
	}
	if len(in.Images) == 0 && len(in.Files) == 0 {
		return nil, nil
	}
	root, err := filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("stage attachments: working directory %q: %w", cwd, err)
	}
	s := &Staging{root: root, Dir: filepath.Join(root, UploadsDir, sanitizeName(runID))}
	if err := s.stageAll(in); err != nil {
		_ = s.rollback()
		return nil, err
	}
	return s, nil
}

// stageAll makes the run's directory and writes every attachment.
func (s *Staging) stageAll(in *run.Input) error {
	if err := s.makeDirs(); err != nil {
		return err
	}
	taken := map[string]bool{}
	for i, img := range in.Images {
		a := attachment{what: fmt.Sprintf("image %d", i+1), name: firstNonEmpty(filepath.Base(img.Filepath), img.ID),
			mimeType: firstNonEmpty(img.MimeType, imageMime(img.Format)), url: img.URL, path: img.Filepath, content: img.Content}
		if err := s.stage(a, taken); err != nil {
			return err
		}
	}
	for i, f := range in.Files {
		a := attachment{what: fmt.Sprintf("file %d", i+1), name: firstNonEmpty(f.Filename, f.Name, filepath.Base(f.Filepath), f.ID),
			mimeType: firstNonEmpty(f.MimeType, mimeOfExtension(f.Format)), url: f.URL, path: f.Filepath, content: f.Content}
		if err := s.stage(a, taken); err != nil {
			return err
		}
	}
	return nil
}

// attachment is an image or a file to stage.
type attachment struct {
	what, name, mimeType, url, path string
	content                         []byte
}

// makeDirs creates .agnogo/uploads/<run_id> below the working directory,
// refusing a symlink at any level.
func (s *Staging) makeDirs() error {
	rel, err := filepath.Rel(s.root, s.Dir)
	if err != nil {
		return fmt.Errorf("stage attachments: %w", err)
	}
	dir := s.root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		dir = filepath.Join(dir, part)
		info, err := os.Lstat(dir)
		switch {
		case err == nil && info.Mode()&os.ModeSymlink != 0:
			return fmt.Errorf("%w: the uploads path %s is a symlink", ErrUnsupportedMedia, dir)
		case err == nil && !info.IsDir():
			return fmt.Errorf("%w: the uploads path %s is not a directory", ErrUnsupportedMedia, dir)
		case err == nil:
		case errors.Is(err, os.ErrNotExist):
			if err := os.Mkdir(dir, 0o700); err != nil {
				return fmt.Errorf("stage attachments: %w", err)
			}
			s.created = append(s.created, dir)
		default:
			return fmt.Errorf("stage attachments: %w", err)
		}
	}
	return nil
}

// stage writes one attachment, or records it as a remote reference.
func (s *Staging) stage(a attachment, taken map[string]bool) error {
	data := a.content
	if data == nil && a.path != "" {
		var err error
		if data, err = readRegular(a.path); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrUnsupportedMedia, a.what, err)
		}
	}
	if data == nil {
		if a.url == "" {
			return fmt.Errorf("%w: %s has no content, file path or URL", ErrUnsupportedMedia, a.what)
		}
		s.Files = append(s.Files, StagedFile{URL: a.url, MimeType: a.mimeType})
		return nil
	}
	mimeType := a.mimeType
	if mimeType == "" {
		mimeType = firstNonEmpty(mimeOfExtension(strings.TrimPrefix(filepath.Ext(a.name), ".")), http.DetectContentType(data))
	}
	name := uniqueName(capName(withExtension(sanitizeName(a.name), mimeType)), taken)
	path := filepath.Join(s.Dir, name)
	if rel, err := filepath.Rel(s.Dir, path); err != nil || rel != name {
		return fmt.Errorf("%w: %s: name %q leaves the uploads directory", ErrUnsupportedMedia, a.what, a.name)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnsupportedMedia, a.what, err)
	}
	s.created = append(s.created, path)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("stage %s: %w", a.what, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("stage %s: %w", a.what, err)
	}
	s.Files = append(s.Files, StagedFile{Path: path, MimeType: strings.SplitN(mimeType, ";", 2)[0], Size: int64(len(data))})
	return nil
}

// readRegular reads a source file that must be a regular file, not a
// symlink.
func readRegular(path string) ([]byte, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (symlinks are refused)", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Prompt is the block appended to the run's prompt that lists the
// attachments; empty without any.
func (s *Staging) Prompt() string {
	if s == nil || len(s.Files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nAttached files. Read them before answering; they are on disk at these paths:\n")
	for _, f := range s.Files {
		if f.Path == "" {
			fmt.Fprintf(&b, "- %s (remote, not downloaded)\n", f.URL)
			continue
		}
		fmt.Fprintf(&b, "- %s (%s, %d bytes)\n", f.Path, firstNonEmpty(f.MimeType, "application/octet-stream"), f.Size)
	}
	return b.String()
}

// Remove deletes the staged files and the directories staging created,
// then the uploads directories left empty.
func (s *Staging) Remove() error {
	if s == nil {
		return nil
	}
	err := s.rollback()
	// Directories another run still uses are not empty: removing them fails,
	// which is fine. Nothing is removed through a symlink.
	for dir := s.Dir; dir != s.root && strings.HasPrefix(dir, s.root); dir = filepath.Dir(dir) {
		info, lerr := os.Lstat(dir)
		if errors.Is(lerr, os.ErrNotExist) {
			continue
		}
		if lerr != nil || !info.IsDir() || os.Remove(dir) != nil {
			break
		}
	}
	return err
}

// rollback deletes what staging created, newest first: every file, and
// the directories no other run uses meanwhile.
func (s *Staging) rollback() error {
	var errs []error
	for i := len(s.created) - 1; i >= 0; i-- {
		err := os.Remove(s.created[i])
		if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
			errs = append(errs, err)
		}
	}
	s.created = nil
	return errors.Join(errs...)
}

// sanitizeName keeps [A-Za-z0-9._-], strips leading and trailing . and _,
// and falls back to "file".
func sanitizeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	clean := strings.Trim(string(b), "._")
	if clean == "" {
		return "file"
	}
	return clean
}

// capName cuts a name to maxNameLength, keeping a short extension.
func capName(name string) string {
	if len(name) <= maxNameLength {
		return name
	}
	ext := filepath.Ext(name)
	if len(ext) > 16 {
		ext = ""
	}
	stem := strings.TrimRight(strings.TrimSuffix(name, ext)[:maxNameLength-len(ext)], "._")
	return cmp.Or(stem, "file") + ext
}

// uniqueName returns name, or name-2, name-3… (before the extension), the
// first not taken, and takes it.
func uniqueName(name string, taken map[string]bool) string {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	candidate := name
	for n := 2; taken[candidate]; n++ {
		candidate = stem + "-" + strconv.Itoa(n) + ext
	}
	taken[candidate] = true
	return candidate
}

// extensions maps the media types staging names files by.
var extensions = map[string]string{
	"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp", "application/pdf": "pdf",
	"text/plain": "txt", "text/markdown": "md", "text/csv": "csv", "application/json": "json",
}

// withExtension adds the media type's extension to a name that has none.
func withExtension(name, mimeType string) string {
	if filepath.Ext(name) != "" {
		return name
	}
	if ext, ok := extensions[strings.SplitN(mimeType, ";", 2)[0]]; ok {
		return name + "." + ext
	}
	return name
}

// imageMime is the media type of an image format such as "png".
func imageMime(format string) string {
	if format == "" {
		return ""
	}
	if format == "jpg" {
		format = "jpeg"
	}
	return "image/" + strings.ToLower(format)
}

// mimeOfExtension is the media type of a file extension (without the dot).
func mimeOfExtension(ext string) string {
	if ext == "" {
		return ""
	}
	for mimeType, known := range extensions {
		if known == ext {
			return mimeType
		}
	}
	return strings.SplitN(mime.TypeByExtension("."+ext), ";", 2)[0]
}

// firstNonEmpty returns the first non-empty string, ignoring "." (the base
// of an empty path).
func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" && v != "." {
			return v
		}
	}
	return ""
}
