package workspace

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Bounds of search_files.
const (
	defaultSearchResults = 50
	maxSearchResults     = 500
	// maxSearchFileBytes skips files too large to be source.
	maxSearchFileBytes = 2 << 20
	// maxMatchLineBytes clips each reported line, as Agno's search_result does.
	maxMatchLineBytes = 500
	// maxScanLineBytes is how much of a line is searched.
	maxScanLineBytes = 64 * 1024
)

type searchFilesArgs struct {
	Query      string `json:"query" jsonschema:"text to find; a regular expression (RE2 syntax) when regex is true"`
	Regex      bool   `json:"regex,omitempty" jsonschema:"treat query as a regular expression"`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"match without regard to case"`
	Directory  string `json:"directory,omitempty" jsonschema:"directory to search, relative to the workspace root; defaults to the root"`
	Glob       string `json:"glob,omitempty" jsonschema:"only search files whose name matches this glob, such as *.go"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"most matching lines to return; defaults to 50, at most 500"`
}

// searchFiles greps the workspace, skipping excluded, binary and very large
// files and not following symlinks.
func (k *Toolkit) searchFiles(ctx context.Context, args searchFilesArgs) (string, error) {
	if args.Query == "" {
		return "", errors.New("query is empty")
	}
	if args.MaxResults < 0 {
		return "", errors.New("max_results must not be negative")
	}
	if args.Glob != "" {
		if _, err := path.Match(args.Glob, ""); err != nil {
			return "", fmt.Errorf("invalid glob %q: %w", args.Glob, err)
		}
	}
	matches, err := lineMatcher(args.Query, args.Regex, args.IgnoreCase)
	if err != nil {
		return "", err
	}
	dir := cmp.Or(args.Directory, ".")
	t, err := k.resolve(dir)
	if err != nil {
		return "", err
	}
	if info, err := os.Stat(t.abs); err != nil || !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	limit := min(cmp.Or(args.MaxResults, defaultSearchResults), maxSearchResults)

	var results []string
	files := 0
	truncated := false
	walkErr := filepath.WalkDir(t.abs, func(abs string, entry fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped, not fatal
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := k.relative(abs)
		if _, _, excluded := k.exclusions.match(rel); excluded {
			if entry.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !entry.Type().IsRegular() || (args.Glob != "" && !fnmatchName(args.Glob, entry.Name())) {
			return nil
		}
		found, more, err := searchFile(abs, rel, matches, limit-len(results))
		if err != nil {
			return nil
		}
		if len(found) > 0 {
			files++
			results = append(results, found...)
		}
		if more {
			truncated = true
			return filepath.SkipAll
		}
		return nil
	})
	if walkErr != nil {
		return "", walkErr
	}
	if len(results) == 0 {
		return fmt.Sprintf("no matches for %q in %s", args.Query, dir), nil
	}
	out := strings.Join(results, "\n")
	if truncated {
		return out + fmt.Sprintf("\n[stopped after %d matching lines: narrow the query, directory or glob]", len(results)), nil
	}
	return out + fmt.Sprintf("\n[%d matching lines in %d files]", len(results), files), nil
}

// lineMatcher returns the test for one line.
func lineMatcher(query string, isRegex, ignoreCase bool) (func(string) bool, error) {
	if isRegex {
		expr := query
		if ignoreCase {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("invalid regular expression: %w", err)
		}
		return re.MatchString, nil
	}
	if ignoreCase {
		lower := strings.ToLower(query)
		return func(line string) bool { return strings.Contains(strings.ToLower(line), lower) }, nil
	}
	return func(line string) bool { return strings.Contains(line, query) }, nil
}

// searchFile returns up to limit "path:line: text" results for one file;
// more reports that the file had further matches.
func searchFile(abs, rel string, matches func(string) bool, limit int) (found []string, more bool, err error) {
	info, err := os.Stat(abs)
	if err != nil || info.Size() > maxSearchFileBytes {
		return nil, false, err
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	reader := bufio.NewReaderSize(f, 64*1024)
	if rejectBinary(reader, rel) != nil {
		return nil, false, nil
	}
	for lineNo := 1; ; lineNo++ {
		line, _, ok, err := readLine(reader, maxScanLineBytes)
		if err != nil || !ok {
			return found, false, err
		}
		if !matches(string(line)) {
			continue
		}
		if len(found) == limit {
			return found, true, nil
		}
		text := clipUTF8(line, maxMatchLineBytes)
		suffix := ""
		if len(text) < len(line) {
			suffix = " …"
		}
		found = append(found, fmt.Sprintf("%s:%d: %s%s", rel, lineNo, text, suffix))
	}
}
