package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

type writeFileArgs struct {
	Path      string `json:"path" jsonschema:"file path, relative to the workspace root"`
	Content   string `json:"content" jsonschema:"the complete new content of the file"`
	Overwrite *bool  `json:"overwrite,omitempty" jsonschema:"replace an existing file; defaults to true"`
}

// writeFile creates or replaces a file atomically.
func (k *Toolkit) writeFile(ctx context.Context, args writeFileArgs) (string, error) {
	t, err := k.resolve(args.Path)
	if err != nil {
		return "", err
	}
	mode := fs.FileMode(0o644)
	info, err := os.Stat(t.abs)
	switch {
	case err == nil && info.IsDir():
		return "", fmt.Errorf("%s is a directory", args.Path)
	case err == nil && args.Overwrite != nil && !*args.Overwrite:
		return "", fmt.Errorf("%s already exists and overwrite is false", args.Path)
	case err == nil:
		mode = info.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(t.abs), 0o755); err != nil {
		return "", fmt.Errorf("create directories for %s: %w", args.Path, err)
	}
	if err := writeAtomic(t.abs, []byte(args.Content), mode); err != nil {
		return "", fmt.Errorf("write %s: %w", args.Path, err)
	}
	return fmt.Sprintf("Wrote %d bytes to %s", len(args.Content), t.rel), nil
}

type editFileArgs struct {
	Path       string `json:"path" jsonschema:"file path, relative to the workspace root"`
	OldStr     string `json:"old_str" jsonschema:"exact text to replace, copied from read_file without the line-number prefix"`
	NewStr     string `json:"new_str" jsonschema:"replacement text"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence instead of exactly one"`
}

// editFile replaces exact text in a file.
func (k *Toolkit) editFile(ctx context.Context, args editFileArgs) (string, error) {
	if args.OldStr == "" {
		return "", errors.New("old_str is empty")
	}
	t, err := k.resolve(args.Path)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(t.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("file not found: %s", args.Path)
	}
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", args.Path)
	}
	data, err := os.ReadFile(t.abs)
	if err != nil {
		return "", err
	}
	content := string(data)
	count := strings.Count(content, args.OldStr)
	switch {
	case count == 0:
		return "", fmt.Errorf("old_str not found in %s: copy it exactly from read_file, without the line-number prefix", args.Path)
	case count > 1 && !args.ReplaceAll:
		return "", fmt.Errorf("old_str matches %d times in %s: include more surrounding text to make it unique, or set replace_all", count, args.Path)
	}
	replaced := 1
	if args.ReplaceAll {
		replaced = count
		content = strings.ReplaceAll(content, args.OldStr, args.NewStr)
	} else {
		content = strings.Replace(content, args.OldStr, args.NewStr, 1)
	}
	if err := writeAtomic(t.abs, []byte(content), info.Mode().Perm()); err != nil {
		return "", fmt.Errorf("write %s: %w", args.Path, err)
	}
	noun := "occurrence"
	if replaced != 1 {
		noun = "occurrences"
	}
	return fmt.Sprintf("Edited %s: replaced %d %s", t.rel, replaced, noun), nil
}

// writeAtomic writes data to a temporary file beside name and renames it into
// place, so a crash never leaves a half-written file.
func writeAtomic(name string, data []byte, mode fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
