package claude

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agnogo/agnogo/storage"
)

// Framework is the transcripts' framework key, as the Claude Agent SDK
// names itself.
const Framework = "claude-agent-sdk"

// Mirror keeps a CLI session's transcript files and the database in step:
// after a turn, [Mirror.Save] appends the lines the CLI added to
// agno_transcripts; before a resume, [Mirror.Restore] writes the stored
// transcript back where the CLI reads it, so any replica — with an empty
// config dir — can resume the session.
type Mirror struct {
	// Store keeps the transcripts.
	Store storage.TranscriptStore
	// ProjectKey groups an agent's transcripts (the agent id by default).
	ProjectKey string
	// ConfigDir is the CLI's config dir (CLAUDE_CONFIG_DIR).
	ConfigDir string
	// Cwd is the CLI's working directory, absolute.
	Cwd string
	// AgnoSessionID and UserID own the transcript.
	AgnoSessionID, UserID string

	// stored caches how many lines of each transcript the database holds,
	// once read, so that saving after every tool batch reads it once.
	stored map[storage.TranscriptKey]int
	// files remembers how far each transcript file has been read.
	files map[string]fileRead
}

// Found reports whether the CLI session's transcript file exists.
func (m *Mirror) Found(sessionID string) bool {
	_, err := os.Stat(m.file(sessionID))
	return err == nil
}

// maxProjectName is the longest project directory name the CLI keeps
// whole; a longer one is cut there and suffixed with a hash of the cwd.
const maxProjectName = 200

// ProjectDir is the directory the CLI keeps a working directory's
// sessions in: <config dir>/projects/<cwd, with symbolic links resolved as
// the CLI's own working directory has them, every character other than a
// letter or digit replaced by "-">. As the CLI counts in UTF-16 code units,
// a character outside the Basic Multilingual Plane becomes "--"; a name
// longer than 200 characters is cut to 200 and suffixed with "-" and the
// base-36 absolute value of the cwd's 32-bit string hash (h = 31*h + unit).
func ProjectDir(configDir, cwd string) string {
	if resolved, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = resolved
	}
	var encoded strings.Builder
	var hash int32
	for _, r := range cwd {
		units := utf16.AppendRune(nil, r)
		for _, u := range units {
			hash = 31*hash + int32(u)
		}
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			encoded.WriteRune(r)
			continue
		}
		encoded.WriteString(strings.Repeat("-", len(units)))
	}
	name := encoded.String()
	if len(name) > maxProjectName {
		name = name[:maxProjectName] + "-" + strconv.FormatInt(max(int64(hash), -int64(hash)), 36)
	}
	return filepath.Join(configDir, "projects", name)
}

// file is the main transcript file of a CLI session.
func (m *Mirror) file(sessionID string) string {
	return filepath.Join(ProjectDir(m.ConfigDir, m.Cwd), sessionID+".jsonl")
}

// subagentDir holds a CLI session's subagent transcripts.
func (m *Mirror) subagentDir(sessionID string) string {
	return filepath.Join(ProjectDir(m.ConfigDir, m.Cwd), sessionID, "subagents")
}

func (m *Mirror) key(sessionID, subpath string) storage.TranscriptKey {
	return storage.TranscriptKey{Framework: Framework, ProjectKey: m.ProjectKey, SessionID: sessionID, Subpath: subpath}
}

// Restore writes the stored transcript of sessionID (and its subagents')
// to the CLI's files when the files hold less than the database. It
// reports whether the database holds the session at all.
func (m *Mirror) Restore(ctx context.Context, sessionID string) (bool, error) {
	entries, err := m.Store.ReadTranscript(ctx, m.key(sessionID, ""), m.UserID, 0)
	if err != nil {
		return false, fmt.Errorf("read transcript %s: %w", sessionID, err)
	}
	if len(entries) == 0 {
		return false, nil
	}
	if err := restoreFile(m.file(sessionID), entries); err != nil {
		return true, err
	}
	subpaths, err := m.Store.ListTranscriptSubpaths(ctx, Framework, m.ProjectKey, sessionID, m.UserID)
	if err != nil {
		return true, fmt.Errorf("list subagent transcripts of %s: %w", sessionID, err)
	}
	for _, subpath := range subpaths {
		name, ok := strings.CutPrefix(subpath, "subagents/")
		if !ok || name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
			continue
		}
		entries, err := m.Store.ReadTranscript(ctx, m.key(sessionID, subpath), m.UserID, 0)
		if err != nil {
			return true, fmt.Errorf("read transcript %s/%s: %w", sessionID, subpath, err)
		}
		if err := restoreFile(filepath.Join(m.subagentDir(sessionID), name+".jsonl"), entries); err != nil {
			return true, err
		}
	}
	return true, nil
}

// restoreFile rewrites path with entries unless it already holds at least
// as many lines.
func restoreFile(path string, entries []storage.TranscriptEntry) error {
	lines, err := readLines(path)
	if err != nil {
		return err
	}
	if len(lines) >= len(entries) {
		return nil
	}
	var b bytes.Buffer
	for _, e := range entries {
		b.Write(entryLine(e.Entry))
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("restore transcript: %w", err)
	}
	tmp := path + ".restore"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("restore transcript: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("restore transcript: %w", err)
	}
	return nil
}

// Save appends to the database the lines of sessionID's transcript files
// (and its subagents') that it does not hold yet.
func (m *Mirror) Save(ctx context.Context, sessionID string) error {
	if err := m.saveFile(ctx, m.file(sessionID), ""); err != nil {
		return err
	}
	subagents, err := os.ReadDir(m.subagentDir(sessionID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list subagent transcripts: %w", err)
	}
	var errs []error
	for _, entry := range subagents {
		name, ok := strings.CutSuffix(entry.Name(), ".jsonl")
		if !ok || !entry.Type().IsRegular() {
			continue
		}
		errs = append(errs, m.saveFile(ctx, filepath.Join(m.subagentDir(sessionID), entry.Name()), "subagents/"+name))
	}
	return errors.Join(errs...)
}

// saveFile appends the new lines of one transcript file. The mirror
// remembers how far it has read each file, so saving after every batch of
// tool results reads only what the CLI appended since; a line the CLI is
// still writing (no newline yet) waits for the next save.
func (m *Mirror) saveFile(ctx context.Context, path, subpath string) error {
	read := m.files[path]
	fresh, end, err := readLinesFrom(path, read.offset)
	if errors.Is(err, errFileReplaced) {
		read = fileRead{}
		fresh, end, err = readLinesFrom(path, 0)
	}
	if err != nil {
		return err
	}
	total := read.lines + len(fresh)
	if total == 0 {
		return nil
	}
	sessionID := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if subpath != "" {
		sessionID = filepath.Base(filepath.Dir(filepath.Dir(path)))
	}
	key := m.key(sessionID, subpath)
	held, known := m.stored[key]
	if !known {
		stored, err := m.Store.ReadTranscript(ctx, key, m.UserID, 0)
		if err != nil {
			return fmt.Errorf("read transcript %s: %w", sessionID, err)
		}
		held = len(stored)
	}
	if held < read.lines {
		// The database lacks lines read before: read the whole file.
		if fresh, end, err = readLinesFrom(path, 0); err != nil {
			return err
		}
		read, total = fileRead{}, len(fresh)
	}
	m.rememberRead(path, fileRead{offset: end, lines: total})
	if held >= total {
		m.rememberStored(key, held)
		return nil
	}
	entries := make([]json.RawMessage, 0, total-held)
	for _, line := range fresh[held-read.lines:] {
		entries = append(entries, storedEntry(line))
	}
	if _, err := m.Store.AppendTranscript(ctx, key, m.AgnoSessionID, m.UserID, entries); err != nil {
		delete(m.stored, key) // read it again next time
		return fmt.Errorf("append transcript %s: %w", sessionID, err)
	}
	m.rememberStored(key, total)
	return nil
}

// fileRead is how far a mirror has read a transcript file: the offset
// after its last complete line, and how many lines came before it.
type fileRead struct {
	offset int64
	lines  int
}

// errFileReplaced: a transcript file is shorter than what was read of it.
var errFileReplaced = errors.New("transcript file replaced")

// readLinesFrom returns the complete, non-empty lines of a file from
// offset on, and the offset after the last of them; none when the file
// does not exist.
func readLinesFrom(path string, offset int64) ([][]byte, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, offset, nil
	}
	if err != nil {
		return nil, offset, fmt.Errorf("read transcript: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, offset, fmt.Errorf("read transcript %s: %w", path, err)
	}
	if info.Size() < offset {
		return nil, offset, errFileReplaced
	}
	data, err := io.ReadAll(io.NewSectionReader(f, offset, info.Size()-offset))
	if err != nil {
		return nil, offset, fmt.Errorf("read transcript %s: %w", path, err)
	}
	complete := bytes.LastIndexByte(data, '\n') + 1
	var lines [][]byte
	for line := range bytes.SplitSeq(data[:complete], []byte{'\n'}) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			lines = append(lines, line)
		}
	}
	return lines, offset + int64(complete), nil
}

// rememberStored records how many lines of a transcript the database holds.
func (m *Mirror) rememberStored(key storage.TranscriptKey, lines int) {
	if m.stored == nil {
		m.stored = map[storage.TranscriptKey]int{}
	}
	m.stored[key] = lines
}

// rememberRead records how far a transcript file has been read.
func (m *Mirror) rememberRead(path string, read fileRead) {
	if m.files == nil {
		m.files = map[string]fileRead{}
	}
	m.files[path] = read
}

// readLines returns a file's complete, non-empty lines; none when it does
// not exist.
func readLines(path string) ([][]byte, error) {
	lines, _, err := readLinesFrom(path, 0)
	return lines, err
}

// unreadableKey wraps a transcript line that is not JSON, so it is stored
// (and restored) verbatim; unreadableBytesKey one that is not even UTF-8
// (a CLI killed mid-write), as base64.
const (
	unreadableKey      = "agnogo_unreadable_line"
	unreadableBytesKey = "agnogo_unreadable_bytes"
)

// storedEntry is how a line is stored: as is when it is JSON, wrapped
// otherwise.
func storedEntry(line []byte) json.RawMessage {
	if json.Valid(line) {
		return line
	}
	if !utf8.Valid(line) {
		wrapped, _ := json.Marshal(map[string]string{unreadableBytesKey: base64.StdEncoding.EncodeToString(line)})
		return wrapped
	}
	wrapped, _ := json.Marshal(map[string]string{unreadableKey: string(line)})
	return wrapped
}

// entryLine is the file line of a stored entry.
func entryLine(entry json.RawMessage) []byte {
	var wrapped map[string]json.RawMessage
	if json.Unmarshal(entry, &wrapped) == nil && len(wrapped) == 1 {
		if raw, ok := wrapped[unreadableKey]; ok {
			var line string
			if json.Unmarshal(raw, &line) == nil {
				return []byte(line)
			}
		}
		if raw, ok := wrapped[unreadableBytesKey]; ok {
			var encoded string
			if json.Unmarshal(raw, &encoded) == nil {
				if line, err := base64.StdEncoding.DecodeString(encoded); err == nil {
					return line
				}
			}
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, entry) == nil {
		return compact.Bytes()
	}
	return entry
}

// Branch copies the stored transcript of sessionID up to uuid — including
// that entry, or stopping before it when before is set — into the new CLI
// session newID, as `claude --fork-session` does: each entry keeps its
// uuid and gets the new session id. The branch is stored and written where
// the CLI reads it.
func (m *Mirror) Branch(ctx context.Context, sessionID, uuid string, before bool, newID string) error {
	entries, err := m.Store.ReadTranscript(ctx, m.key(sessionID, ""), m.UserID, 0)
	if err != nil {
		return fmt.Errorf("read transcript %s: %w", sessionID, err)
	}
	at := slices.IndexFunc(entries, func(e storage.TranscriptEntry) bool { return entryUUID(e) == uuid })
	if at < 0 {
		return fmt.Errorf("transcript %s has no entry %s", sessionID, uuid)
	}
	if !before {
		at++
	}
	branch := make([]json.RawMessage, 0, at)
	for _, e := range entries[:at] {
		branch = append(branch, withSessionID(e.Entry, newID))
	}
	stored, err := m.Store.AppendTranscript(ctx, m.key(newID, ""), m.AgnoSessionID, m.UserID, branch)
	if err != nil {
		return fmt.Errorf("store branch of %s: %w", sessionID, err)
	}
	return restoreFile(m.file(newID), stored)
}

// entryUUID is a stored entry's uuid field.
func entryUUID(e storage.TranscriptEntry) string {
	var fields struct {
		UUID string `json:"uuid"`
	}
	if json.Unmarshal(e.Entry, &fields) == nil && fields.UUID != "" {
		return fields.UUID
	}
	return ""
}

// withSessionID rewrites an entry's sessionId field; an entry without one
// is kept as is.
func withSessionID(entry json.RawMessage, sessionID string) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(entry, &fields) != nil {
		return entry
	}
	if _, ok := fields["sessionId"]; !ok {
		return entry
	}
	fields["sessionId"], _ = json.Marshal(sessionID)
	rewritten, err := json.Marshal(fields)
	if err != nil {
		return entry
	}
	return rewritten
}

// LastCostState reads the running totals of the last cost-state line of
// a transcript file; zero when it has none.
func LastCostState(path string) (CostState, error) {
	lines, err := readLines(path)
	if err != nil {
		return CostState{}, err
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if !bytes.Contains(lines[i], []byte(`"cost-state"`)) {
			continue
		}
		var state struct {
			Type string `json:"type"`
			CostState
		}
		if json.Unmarshal(lines[i], &state) == nil && state.Type == "cost-state" {
			return state.CostState, nil
		}
	}
	return CostState{}, nil
}
