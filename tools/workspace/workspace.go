package workspace

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agnogo/agnogo/tool"
)

// Tool names, as the model sees them.
const (
	ReadFileName    = "read_file"
	ListFilesName   = "list_files"
	SearchFilesName = "search_files"
	WriteFileName   = "write_file"
	EditFileName    = "edit_file"
	RunShellName    = "run_shell"
)

// Defaults of [Config].
const (
	// DefaultMaxReadBytes is one read_file page, Agno's READ_MAX_CHARS.
	DefaultMaxReadBytes = 16000
	// DefaultShellTimeout bounds one run_shell command.
	DefaultShellTimeout = 60 * time.Second
	// DefaultMaxShellOutputBytes bounds the output run_shell returns.
	DefaultMaxShellOutputBytes = 16000
)

// Config configures a [Toolkit]. Only Root is required.
type Config struct {
	// Root is the directory the tools work in. Every path argument is
	// confined to it. It is resolved once, to an absolute path with its
	// symlinks evaluated; it must exist. Required.
	Root string
	// ConfirmWrites makes write_file, edit_file and run_shell pause the run
	// for a person's confirmation before each call (Agno's default for
	// destructive operations). Defaults to true; set new(false) to let them
	// run unattended.
	ConfirmWrites *bool
	// Exclusions are fnmatch patterns matched against every component of a
	// path relative to Root; a matching path is refused by read_file,
	// write_file and edit_file and hidden from list_files and search_files.
	// An entry starting with "!" is an exemption, which always wins. Defaults
	// to [DefaultExclusions] (credential files, agent state, VCS and build
	// directories); a non-nil empty slice disables exclusions.
	Exclusions []string
	// MaxReadBytes is the size of one read_file page; the model reads on
	// with the offset argument. Defaults to [DefaultMaxReadBytes].
	MaxReadBytes int
	// ShellTimeout bounds each run_shell command; the model may ask for
	// less, never more. Defaults to [DefaultShellTimeout].
	ShellTimeout time.Duration
	// MaxShellOutputBytes bounds the combined output run_shell returns; the
	// middle of a longer output is cut with a note. Defaults to
	// [DefaultMaxShellOutputBytes].
	MaxShellOutputBytes int
	// Env is the environment of run_shell commands, as "KEY=value" strings.
	// Defaults to nil: the process's own environment, as in Agno; a non-nil
	// empty slice gives an empty environment. The shell is not a sandbox:
	// exclusions do not apply to what a command reads.
	Env []string
}

// Toolkit holds the workspace tools for one root directory. It is immutable
// and safe for concurrent use; the tools it returns share it.
type Toolkit struct {
	root                string
	confirmWrites       bool
	exclusions          exclusions
	maxReadBytes        int
	shellTimeout        time.Duration
	maxShellOutputBytes int
	env                 []string
	tools               []tool.Tool
}

// New checks cfg, resolves the root and builds the tools.
func New(cfg Config) (*Toolkit, error) {
	if cfg.Root == "" {
		return nil, errors.New("workspace: Root is required")
	}
	if cfg.MaxReadBytes < 0 || cfg.ShellTimeout < 0 || cfg.MaxShellOutputBytes < 0 {
		return nil, errors.New("workspace: MaxReadBytes, ShellTimeout and MaxShellOutputBytes must not be negative")
	}
	abs, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("workspace: root %s: %w", cfg.Root, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: root %s: %w", cfg.Root, err)
	}
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("workspace: root %s: %w", cfg.Root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("workspace: root %s is not a directory", cfg.Root)
	}
	patterns := cfg.Exclusions
	if patterns == nil {
		patterns = defaultExclusions
	}
	ex, err := parseExclusions(patterns)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	k := &Toolkit{
		root:                root,
		confirmWrites:       cfg.ConfirmWrites == nil || *cfg.ConfirmWrites,
		exclusions:          ex,
		maxReadBytes:        cmp.Or(cfg.MaxReadBytes, DefaultMaxReadBytes),
		shellTimeout:        cmp.Or(cfg.ShellTimeout, DefaultShellTimeout),
		maxShellOutputBytes: cmp.Or(cfg.MaxShellOutputBytes, DefaultMaxShellOutputBytes),
		env:                 slices.Clone(cfg.Env),
	}
	if err := k.buildTools(); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return k, nil
}

// Root returns the resolved root directory.
func (k *Toolkit) Root() string { return k.root }

// Tools returns the workspace tools: read_file, list_files, search_files,
// write_file, edit_file and run_shell. The slice is a copy.
func (k *Toolkit) Tools() []tool.Tool { return slices.Clone(k.tools) }

// Instructions returns guidance for the agent's system message on using the
// tools well, as Agno's Workspace adds.
func (k *Toolkit) Instructions() string {
	return "Workspace paths are relative to the workspace root. Always read_file before editing: " +
		"its line-numbered output shows the exact text to pass as edit_file's old_str (without the " +
		"line-number prefix). Do not guess file contents. Credential files such as .env and private " +
		"keys are off limits."
}

func (k *Toolkit) buildTools() error {
	confirm := k.confirmWrites
	var errs []error
	add := func(t tool.Tool, err error) {
		errs = append(errs, err)
		if err == nil {
			k.tools = append(k.tools, t)
		}
	}
	add(tool.New(tool.Config{
		Name: ReadFileName,
		Description: "Read a text file from the workspace. Lines come numbered (cat -n style); a long file " +
			"comes in pages: call again with offset to continue.",
	}, k.readFile))
	add(tool.New(tool.Config{
		Name:        ListFilesName,
		Description: "List a workspace directory: directories end with '/', files show their size.",
	}, k.listFiles))
	add(tool.New(tool.Config{
		Name: SearchFilesName,
		Description: "Search the contents of workspace files for a substring or a regular expression; " +
			"returns path:line: text for each matching line.",
	}, k.searchFiles))
	add(tool.New(tool.Config{
		Name:                 WriteFileName,
		Description:          "Create or overwrite a workspace file with the given content, creating parent directories.",
		RequiresConfirmation: confirm,
	}, k.writeFile))
	add(tool.New(tool.Config{
		Name: EditFileName,
		Description: "Replace exact text in a workspace file. old_str must match exactly once, " +
			"unless replace_all is set.",
		RequiresConfirmation: confirm,
	}, k.editFile))
	add(tool.New(tool.Config{
		Name: RunShellName,
		Description: "Run a bash command in the workspace root and return its combined output and exit code. " +
			"Commands time out after " + k.shellTimeout.String() + ".",
		RequiresConfirmation: confirm,
	}, k.runShell))
	return errors.Join(errs...)
}
