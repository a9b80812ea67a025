package workspace_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/tools/workspace"
)

// bundle is a workspace over a fresh temporary root.
type bundle struct {
	root    string
	toolkit *workspace.Toolkit
	tools   *tool.Set
}

func setup(t *testing.T, cfg workspace.Config) *bundle {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	tk, err := workspace.New(cfg)
	require.NoError(t, err)
	set, err := tool.NewSet(tk.Tools()...)
	require.NoError(t, err)
	return &bundle{root: tk.Root(), toolkit: tk, tools: set}
}

// file writes content at rel below the root, creating directories.
func (b *bundle) file(t *testing.T, rel, content string) string {
	t.Helper()
	abs := filepath.Join(b.root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(abs), 0o755))
	require.NoError(t, os.WriteFile(abs, []byte(content), 0o644))
	return abs
}

// read returns the content of rel below the root.
func (b *bundle) read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.root, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(data)
}

// call runs a tool as the model would, with args encoded as JSON.
func (b *bundle) call(t *testing.T, name string, args any) (string, error) {
	t.Helper()
	tl, ok := b.tools.Lookup(name)
	require.True(t, ok, "tool %s", name)
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tl.Call(context.Background(), raw)
}

func TestNew(t *testing.T) {
	t.Parallel()
	t.Run("root is required", func(t *testing.T) {
		t.Parallel()
		_, err := workspace.New(workspace.Config{})
		require.ErrorContains(t, err, "Root is required")
	})
	t.Run("root must exist", func(t *testing.T) {
		t.Parallel()
		_, err := workspace.New(workspace.Config{Root: filepath.Join(t.TempDir(), "missing")})
		require.Error(t, err)
	})
	t.Run("root must be a directory", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(file, nil, 0o644))
		_, err := workspace.New(workspace.Config{Root: file})
		require.ErrorContains(t, err, "not a directory")
	})
	t.Run("bad exclusion", func(t *testing.T) {
		t.Parallel()
		_, err := workspace.New(workspace.Config{Root: t.TempDir(), Exclusions: []string{"a/b"}})
		require.ErrorContains(t, err, `exclusion "a/b"`)
	})
	t.Run("negative limits", func(t *testing.T) {
		t.Parallel()
		_, err := workspace.New(workspace.Config{Root: t.TempDir(), MaxReadBytes: -1})
		require.ErrorContains(t, err, "must not be negative")
	})
	t.Run("root is absolute with symlinks evaluated", func(t *testing.T) {
		t.Parallel()
		real := t.TempDir()
		link := filepath.Join(t.TempDir(), "link")
		require.NoError(t, os.Symlink(real, link))
		tk, err := workspace.New(workspace.Config{Root: link})
		require.NoError(t, err)
		want, err := filepath.EvalSymlinks(real)
		require.NoError(t, err)
		require.Equal(t, want, tk.Root())
	})
}

func TestToolsAndConfirmation(t *testing.T) {
	t.Parallel()
	writes := map[string]bool{workspace.WriteFileName: true, workspace.EditFileName: true, workspace.RunShellName: true}
	tests := []struct {
		name          string
		confirmWrites *bool
		wantConfirm   bool
	}{
		{"default confirms writes", nil, true},
		{"explicit true", new(true), true},
		{"false runs unattended", new(false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, workspace.Config{ConfirmWrites: tt.confirmWrites})
			require.Equal(t, []string{"read_file", "list_files", "search_files", "write_file", "edit_file", "run_shell"}, b.tools.Names())
			for _, spec := range b.tools.Specs() {
				require.Equal(t, tt.wantConfirm && writes[spec.Name], spec.RequiresConfirmation, spec.Name)
				require.NotEmpty(t, spec.Description, spec.Name)
				require.True(t, json.Valid(spec.Parameters), spec.Name)
			}
		})
	}
}

func TestToolsReturnsACopy(t *testing.T) {
	t.Parallel()
	b := setup(t, workspace.Config{})
	tools := b.toolkit.Tools()
	tools[0] = nil
	require.NotNil(t, b.toolkit.Tools()[0])
	require.NotEmpty(t, b.toolkit.Instructions())
}

func TestPathConfinement(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644))

	b := setup(t, workspace.Config{})
	b.file(t, "inside.txt", "inside")
	b.file(t, "dir/nested.txt", "nested")
	require.NoError(t, os.Symlink(outside, filepath.Join(b.root, "escape_dir")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(b.root, "escape_file")))
	require.NoError(t, os.Symlink(filepath.Join(b.root, "inside.txt"), filepath.Join(b.root, "alias.txt")))
	require.NoError(t, os.Symlink(filepath.Join(b.root, "missing"), filepath.Join(b.root, "dangling")))

	tests := []struct {
		name    string
		path    string
		wantErr string // "" when the read must succeed
	}{
		{"relative", "inside.txt", ""},
		{"dot segments that stay inside", "dir/../inside.txt", ""},
		{"absolute inside", filepath.Join(b.root, "dir", "nested.txt"), ""},
		{"symlink inside", "alias.txt", ""},
		{"parent", "../secret.txt", "escapes the workspace root"},
		{"deep escape", "dir/../../secret.txt", "escapes the workspace root"},
		{"absolute outside", filepath.Join(outside, "secret.txt"), "outside the workspace root"},
		{"absolute system file", "/etc/passwd", "outside the workspace root"},
		{"symlinked directory outside", "escape_dir/secret.txt", "symbolic link that leads outside"},
		{"symlinked file outside", "escape_file", "symbolic link that leads outside"},
		{"broken symlink", "dangling", "broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := b.call(t, workspace.ReadFileName, map[string]any{"path": tt.path})
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.NotContains(t, out, "outside")
				return
			}
			require.ErrorContains(t, err, "refused: ")
			require.ErrorContains(t, err, tt.wantErr)
			require.Empty(t, out)
		})
	}
}

func TestWriteCannotEscapeThroughSymlinks(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	b := setup(t, workspace.Config{ConfirmWrites: new(false)})
	require.NoError(t, os.Symlink(outside, filepath.Join(b.root, "escape_dir")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(b.root, "dangling_out")))

	for _, path := range []string{"escape_dir/new.txt", "escape_dir/sub/new.txt", "dangling_out", "../new.txt", filepath.Join(outside, "new.txt")} {
		_, err := b.call(t, workspace.WriteFileName, map[string]any{"path": path, "content": "pwned"})
		require.ErrorContains(t, err, "refused: ", path)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing may be written outside the root")
}

func TestCredentialFiles(t *testing.T) {
	t.Parallel()
	b := setup(t, workspace.Config{ConfirmWrites: new(false)})
	b.file(t, ".env", "API_KEY=sk-live-123")
	b.file(t, ".env.local", "API_KEY=sk-live-456")
	b.file(t, ".env.example", "API_KEY=changeme")
	b.file(t, "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----")
	b.file(t, "certs/server.pem", "-----BEGIN CERTIFICATE-----")
	b.file(t, ".ssh/config", "Host *")
	b.file(t, "credentials.py", "def load(): pass")
	require.NoError(t, os.Symlink(filepath.Join(b.root, ".env"), filepath.Join(b.root, "innocent.txt")))

	t.Run("read refused", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{".env", ".env.local", "id_rsa", "certs/server.pem", ".ssh/config", "innocent.txt", "./.env", filepath.Join(b.root, ".env")} {
			out, err := b.call(t, workspace.ReadFileName, map[string]any{"path": path})
			require.ErrorContains(t, err, "refused: ", path)
			require.NotContains(t, out, "sk-live")
		}
		_, err := b.call(t, workspace.ReadFileName, map[string]any{"path": ".env"})
		require.EqualError(t, err, `refused: .env is a credential file (matches ".env*"); the workspace tools never read or write it`)
		_, err = b.call(t, workspace.ReadFileName, map[string]any{"path": ".ssh/config"})
		require.ErrorContains(t, err, "refused: .ssh/config is inside .ssh, which holds credentials")
	})
	t.Run("templates and lookalikes allowed", func(t *testing.T) {
		t.Parallel()
		out, err := b.call(t, workspace.ReadFileName, map[string]any{"path": ".env.example"})
		require.NoError(t, err)
		require.Contains(t, out, "API_KEY=changeme")
		_, err = b.call(t, workspace.ReadFileName, map[string]any{"path": "credentials.py"})
		require.NoError(t, err)
	})
	t.Run("write and edit refused", func(t *testing.T) {
		t.Parallel()
		_, err := b.call(t, workspace.WriteFileName, map[string]any{"path": ".env.production", "content": "X=1"})
		require.ErrorContains(t, err, "refused: .env.production is a credential file")
		_, err = b.call(t, workspace.EditFileName, map[string]any{"path": ".env.local", "old_str": "456", "new_str": "789"})
		require.ErrorContains(t, err, "refused: ")
		require.Equal(t, "API_KEY=sk-live-456", b.read(t, ".env.local"))
		_, err = b.call(t, workspace.WriteFileName, map[string]any{"path": ".ssh/authorized_keys", "content": "ssh-rsa AAA"})
		require.ErrorContains(t, err, "refused: ")
	})
	t.Run("hidden from list", func(t *testing.T) {
		t.Parallel()
		out, err := b.call(t, workspace.ListFilesName, map[string]any{"recursive": true})
		require.NoError(t, err)
		require.Contains(t, out, ".env.example")
		require.Contains(t, out, "credentials.py")
		require.Contains(t, out, "certs/")
		for _, hidden := range []string{".env\t", ".env.local", "id_rsa", "server.pem", ".ssh"} {
			require.NotContains(t, out, hidden)
		}
		_, err = b.call(t, workspace.ListFilesName, map[string]any{"directory": ".ssh"})
		require.ErrorContains(t, err, "refused: ")
	})
	t.Run("skipped by search", func(t *testing.T) {
		t.Parallel()
		out, err := b.call(t, workspace.SearchFilesName, map[string]any{"query": "API_KEY"})
		require.NoError(t, err)
		require.Contains(t, out, ".env.example:1: API_KEY=changeme")
		require.NotContains(t, out, "sk-live")
		require.NotContains(t, out, "innocent.txt", "symlinks are not followed")
	})
}

func TestExclusionsCanBeReplaced(t *testing.T) {
	t.Parallel()
	b := setup(t, workspace.Config{Exclusions: []string{}})
	b.file(t, ".env", "A=1")
	out, err := b.call(t, workspace.ReadFileName, map[string]any{"path": ".env"})
	require.NoError(t, err)
	require.Contains(t, out, "A=1")

	custom := setup(t, workspace.Config{Exclusions: append(workspace.DefaultExclusions(), "*.sqlite", "!keep.sqlite")})
	custom.file(t, "data.sqlite", "x")
	custom.file(t, "keep.sqlite", "y")
	_, err = custom.call(t, workspace.ReadFileName, map[string]any{"path": "data.sqlite"})
	require.EqualError(t, err, `refused: data.sqlite is excluded from the workspace (matches "*.sqlite")`)
	_, err = custom.call(t, workspace.ReadFileName, map[string]any{"path": "keep.sqlite"})
	require.NoError(t, err)
}

func TestArgumentsAreValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, workspace.Config{})
	_, err := b.call(t, workspace.ReadFileName, map[string]any{"file": "x"})
	var argErr *tool.ArgumentError
	require.ErrorAs(t, err, &argErr)
	_, err = b.call(t, workspace.EditFileName, map[string]any{"path": "x", "old_str": 1, "new_str": "y"})
	require.ErrorAs(t, err, &argErr)
	require.False(t, strings.HasPrefix(err.Error(), "refused"))
}
