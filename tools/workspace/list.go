package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Bounds of list_files.
const (
	defaultListDepth = 3
	maxListEntries   = 1000
)

type listFilesArgs struct {
	Directory string `json:"directory,omitempty" jsonschema:"directory relative to the workspace root; defaults to the root"`
	Pattern   string `json:"pattern,omitempty" jsonschema:"glob matched against entry names, such as *.go"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"walk subdirectories too"`
	MaxDepth  int    `json:"max_depth,omitempty" jsonschema:"levels to walk when recursive; defaults to 3"`
}

// listFiles lists a directory, hiding excluded entries.
func (k *Toolkit) listFiles(ctx context.Context, args listFilesArgs) (string, error) {
	if args.MaxDepth < 0 {
		return "", errors.New("max_depth must not be negative")
	}
	if args.Pattern != "" {
		if _, err := path.Match(args.Pattern, ""); err != nil {
			return "", fmt.Errorf("invalid pattern %q: %w", args.Pattern, err)
		}
	}
	dir := cmp.Or(args.Directory, ".")
	t, err := k.resolve(dir)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(t.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("directory not found: %s", dir)
	}
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory: use %s", dir, ReadFileName)
	}
	depth := 1
	if args.Recursive {
		depth = cmp.Or(args.MaxDepth, defaultListDepth)
	}
	lister := &lister{k: k, ctx: ctx, pattern: args.Pattern}
	if err := lister.walk(t.abs, depth); err != nil {
		return "", err
	}
	if len(lister.lines) == 0 {
		return fmt.Sprintf("(no entries in %s)", dir), nil
	}
	out := strings.Join(lister.lines, "\n")
	if lister.truncated {
		out += fmt.Sprintf("\n[stopped after %d entries: list a subdirectory or use a pattern]", maxListEntries)
	}
	return out, nil
}

// lister collects list_files entries.
type lister struct {
	k         *Toolkit
	ctx       context.Context
	pattern   string
	lines     []string
	truncated bool
}

// walk lists dir and, while depth allows, its subdirectories, depth first
// in name order. Symlinked directories are listed but not entered.
func (l *lister) walk(dir string, depth int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if l.truncated {
			return nil
		}
		if err := l.ctx.Err(); err != nil {
			return err
		}
		abs := filepath.Join(dir, entry.Name())
		rel := l.k.relative(abs)
		if _, _, excluded := l.k.exclusions.match(rel); excluded {
			continue
		}
		if l.pattern == "" || fnmatchName(l.pattern, entry.Name()) {
			if len(l.lines) == maxListEntries {
				l.truncated = true
				return nil
			}
			l.lines = append(l.lines, describeEntry(rel, entry))
		}
		if entry.IsDir() && depth > 1 {
			if err := l.walk(abs, depth-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// fnmatchName matches a name against a shell glob.
func fnmatchName(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// describeEntry renders one listing line: "dir/", "file<TAB>size" or
// "link@ -> target".
func describeEntry(rel string, entry fs.DirEntry) string {
	switch {
	case entry.IsDir():
		return rel + "/"
	case entry.Type()&fs.ModeSymlink != 0:
		return rel + "@"
	}
	info, err := entry.Info()
	if err != nil {
		return rel
	}
	return rel + "\t" + formatSize(info.Size())
}

// formatSize renders a byte count for people and models.
func formatSize(size int64) string {
	if size < 1024 {
		return fmt.Sprintf("%dB", size)
	}
	value := float64(size) / 1024
	for _, unit := range []string{"KB", "MB"} {
		if value < 1024 {
			return fmt.Sprintf("%.1f%s", value, unit)
		}
		value /= 1024
	}
	return fmt.Sprintf("%.1fGB", value)
}
