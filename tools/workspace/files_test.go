package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/tools/workspace"
)

func TestReadFile(t *testing.T) {
	t.Parallel()
	b := setup(t, workspace.Config{MaxReadBytes: 64})
	b.file(t, "five.txt", "one\ntwo\r\nthree\nfour\nfive\n")
	b.file(t, "no_newline.txt", "a\nb")
	b.file(t, "empty.txt", "")
	b.file(t, "long.txt", strings.Repeat("x", 200)+"\nshort\n")
	b.file(t, "utf8.txt", strings.Repeat("é", 100)+"\n")
	b.file(t, "many.txt", strings.Repeat("line\n", 20))
	b.file(t, "blob.bin", "PK\x00\x03binary")
	require.NoError(t, os.Mkdir(filepath.Join(b.root, "dir"), 0o755))

	tests := []struct {
		name    string
		args    map[string]any
		want    string
		wantErr string
	}{
		{"whole file", map[string]any{"path": "five.txt"},
			"     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive", ""},
		{"offset and limit", map[string]any{"path": "five.txt", "offset": 2, "limit": 2},
			"     2\ttwo\n     3\tthree\n[showing lines 2-3; five.txt continues: call read_file with offset=4]", ""},
		{"limit reaching the end", map[string]any{"path": "five.txt", "offset": 4, "limit": 2},
			"     4\tfour\n     5\tfive", ""},
		{"last line without newline", map[string]any{"path": "no_newline.txt"}, "     1\ta\n     2\tb", ""},
		{"empty", map[string]any{"path": "empty.txt"}, "(empty.txt is empty)", ""},
		{"page full", map[string]any{"path": "many.txt"},
			strings.Repeat("", 0) + numbered(1, 5, "line") + "\n[showing lines 1-5; many.txt continues: call read_file with offset=6]", ""},
		{"line longer than a page", map[string]any{"path": "long.txt", "limit": 1},
			"     1\t" + strings.Repeat("x", 64-len("     1\t")-len(" … [line clipped]\n")) + " … [line clipped]\n[showing lines 1-1; long.txt continues: call read_file with offset=2]", ""},
		{"offset past the end", map[string]any{"path": "five.txt", "offset": 9}, "", "offset 9 is past the end of five.txt, which has 5 lines"},
		{"negative offset", map[string]any{"path": "five.txt", "offset": -1}, "", "must not be negative"},
		{"missing", map[string]any{"path": "nope.txt"}, "", "file not found: nope.txt"},
		{"directory", map[string]any{"path": "dir"}, "", "dir is a directory: use list_files"},
		{"binary", map[string]any{"path": "blob.bin"}, "", "blob.bin is a binary file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := b.call(t, workspace.ReadFileName, tt.args)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	t.Run("never splits a UTF-8 sequence", func(t *testing.T) {
		t.Parallel()
		got, err := b.call(t, workspace.ReadFileName, map[string]any{"path": "utf8.txt"})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(got, "     1\té"))
		require.Contains(t, got, "[line clipped]")
		require.NotContains(t, got, "\uFFFD")
		require.True(t, strings.ToValidUTF8(got, "?") == got)
	})
}

// numbered renders lines first..last of a file whose every line is text.
func numbered(first, last int, text string) string {
	var lines []string
	for i := first; i <= last; i++ {
		lines = append(lines, fmt.Sprintf("%6d\t%s", i, text))
	}
	return strings.Join(lines, "\n")
}

func TestReadFileDefaultPage(t *testing.T) {
	t.Parallel()
	b := setup(t, workspace.Config{})
	b.file(t, "big.txt", strings.Repeat(strings.Repeat("y", 99)+"\n", 1000))
	got, err := b.call(t, workspace.ReadFileName, map[string]any{"path": "big.txt"})
	require.NoError(t, err)
	require.LessOrEqual(t, len(got), workspace.DefaultMaxReadBytes+200)
	require.Contains(t, got, "continues: call read_file with offset=")
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	b := setup(t, workspace.Config{})
	b.file(t, "README.md", "hello")
	b.file(t, "src/main.go", strings.Repeat("x", 2048))
	b.file(t, "src/util/strings.go", "package util")
	b.file(t, "src/util/deep/deeper/x.go", "package deeper")
	b.file(t, ".git/HEAD", "ref: refs/heads/main")
	b.file(t, "node_modules/react/index.js", "")
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(b.root, "link")))

	tests := []struct {
		name    string
		args    map[string]any
		want    string
		wantErr string
	}{
		{"root", map[string]any{}, "README.md\t5B\nlink@\nsrc/", ""},
		{"subdirectory", map[string]any{"directory": "src"}, "src/main.go\t2.0KB\nsrc/util/", ""},
		{"recursive", map[string]any{"recursive": true},
			"README.md\t5B\nlink@\nsrc/\nsrc/main.go\t2.0KB\nsrc/util/\nsrc/util/deep/\nsrc/util/strings.go\t12B", ""},
		{"recursive depth", map[string]any{"recursive": true, "max_depth": 2},
			"README.md\t5B\nlink@\nsrc/\nsrc/main.go\t2.0KB\nsrc/util/", ""},
		{"pattern", map[string]any{"recursive": true, "max_depth": 10, "pattern": "*.go"},
			"src/main.go\t2.0KB\nsrc/util/deep/deeper/x.go\t14B\nsrc/util/strings.go\t12B", ""},
		{"empty result", map[string]any{"pattern": "*.rs"}, "(no entries in .)", ""},
		{"not a directory", map[string]any{"directory": "README.md"}, "", "README.md is not a directory"},
		{"missing", map[string]any{"directory": "nope"}, "", "directory not found: nope"},
		{"escape", map[string]any{"directory": ".."}, "", "refused: .. escapes the workspace root"},
		{"excluded directory", map[string]any{"directory": ".git"}, "", `refused: .git is excluded from the workspace (matches ".git")`},
		{"bad pattern", map[string]any{"pattern": "[x"}, "", "invalid pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := b.call(t, workspace.ListFilesName, tt.args)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestSearchFiles(t *testing.T) {
	t.Parallel()
	b := setup(t, workspace.Config{})
	b.file(t, "a.go", "package a\n\nfunc Hello() string { return \"hello\" }\n")
	b.file(t, "b/b.txt", "Say HELLO\nnothing here\nhello again\n")
	b.file(t, "b/long.txt", strings.Repeat("z", 600)+"hello\n")
	b.file(t, "image.png", "\x89PNG\x00\x00hello")
	b.file(t, ".env", "HELLO=secret")
	b.file(t, "node_modules/x/hello.js", "hello")

	tests := []struct {
		name    string
		args    map[string]any
		want    string
		wantErr string
	}{
		{"substring", map[string]any{"query": "hello"},
			"a.go:3: func Hello() string { return \"hello\" }\nb/b.txt:3: hello again\nb/long.txt:1: " + strings.Repeat("z", 500) + " …\n[3 matching lines in 3 files]", ""},
		{"ignore case", map[string]any{"query": "hello", "ignore_case": true, "directory": "b", "glob": "b.txt"},
			"b/b.txt:1: Say HELLO\nb/b.txt:3: hello again\n[2 matching lines in 1 files]", ""},
		{"regex", map[string]any{"query": `^func \w+\(`, "regex": true},
			"a.go:3: func Hello() string { return \"hello\" }\n[1 matching lines in 1 files]", ""},
		{"max results", map[string]any{"query": "hello", "ignore_case": true, "max_results": 2},
			"a.go:3: func Hello() string { return \"hello\" }\nb/b.txt:1: Say HELLO\n[stopped after 2 matching lines: narrow the query, directory or glob]", ""},
		{"no match", map[string]any{"query": "goodbye"}, `no matches for "goodbye" in .`, ""},
		{"invalid regex", map[string]any{"query": "(", "regex": true}, "", "invalid regular expression"},
		{"empty query", map[string]any{"query": ""}, "", "query is empty"},
		{"escape", map[string]any{"query": "x", "directory": "../"}, "", "refused: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := b.call(t, workspace.SearchFilesName, tt.args)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	b := setup(t, workspace.Config{ConfirmWrites: new(false)})

	got, err := b.call(t, workspace.WriteFileName, map[string]any{"path": "new/dir/file.txt", "content": "hello"})
	require.NoError(t, err)
	require.Equal(t, "Wrote 5 bytes to new/dir/file.txt", got)
	require.Equal(t, "hello", b.read(t, "new/dir/file.txt"))

	script := b.file(t, "run.sh", "old")
	require.NoError(t, os.Chmod(script, 0o755))
	_, err = b.call(t, workspace.WriteFileName, map[string]any{"path": "run.sh", "content": "#!/bin/sh\n"})
	require.NoError(t, err)
	require.Equal(t, "#!/bin/sh\n", b.read(t, "run.sh"))
	info, err := os.Stat(script)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), info.Mode().Perm(), "the mode survives a rewrite")

	_, err = b.call(t, workspace.WriteFileName, map[string]any{"path": "run.sh", "content": "x", "overwrite": false})
	require.ErrorContains(t, err, "run.sh already exists and overwrite is false")
	require.Equal(t, "#!/bin/sh\n", b.read(t, "run.sh"))

	_, err = b.call(t, workspace.WriteFileName, map[string]any{"path": "new", "content": "x"})
	require.ErrorContains(t, err, "new is a directory")

	// Writing through an inside symlink changes its target and keeps the link.
	require.NoError(t, os.Symlink(filepath.Join(b.root, "run.sh"), filepath.Join(b.root, "alias.sh")))
	_, err = b.call(t, workspace.WriteFileName, map[string]any{"path": "alias.sh", "content": "via alias"})
	require.NoError(t, err)
	require.Equal(t, "via alias", b.read(t, "run.sh"))
	target, err := os.Readlink(filepath.Join(b.root, "alias.sh"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(b.root, "run.sh"), target)

	entries, err := os.ReadDir(b.root)
	require.NoError(t, err)
	for _, entry := range entries {
		require.NotContains(t, entry.Name(), ".tmp-", "no temporary file is left behind")
	}
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		content     string
		args        map[string]any
		wantResult  string
		wantErr     string
		wantContent string
	}{
		{"exactly once", "a := 1\nb := 2\n", map[string]any{"old_str": "b := 2", "new_str": "b := 3"},
			"Edited code.go: replaced 1 occurrence", "", "a := 1\nb := 3\n"},
		{"not found", "a := 1\n", map[string]any{"old_str": "c := 1", "new_str": "x"},
			"", "old_str not found in code.go", "a := 1\n"},
		{"ambiguous", "x\nx\n", map[string]any{"old_str": "x", "new_str": "y"},
			"", "old_str matches 2 times in code.go", "x\nx\n"},
		{"replace all", "x\nx\n", map[string]any{"old_str": "x", "new_str": "y", "replace_all": true},
			"Edited code.go: replaced 2 occurrences", "", "y\ny\n"},
		{"empty old_str", "x\n", map[string]any{"old_str": "", "new_str": "y"},
			"", "old_str is empty", "x\n"},
		{"whitespace matters", "\tindented\n", map[string]any{"old_str": "    indented", "new_str": "y"},
			"", "old_str not found", "\tindented\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, workspace.Config{ConfirmWrites: new(false)})
			b.file(t, "code.go", tt.content)
			args := map[string]any{"path": "code.go"}
			for k, v := range tt.args {
				args[k] = v
			}
			got, err := b.call(t, workspace.EditFileName, args)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
				require.Equal(t, tt.wantResult, got)
			}
			require.Equal(t, tt.wantContent, b.read(t, "code.go"))
		})
	}

	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		b := setup(t, workspace.Config{})
		_, err := b.call(t, workspace.EditFileName, map[string]any{"path": "nope.go", "old_str": "a", "new_str": "b"})
		require.ErrorContains(t, err, "file not found: nope.go")
	})
}
