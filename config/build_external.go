package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/external/codex"
	"github.com/agnogo/agnogo/storage/dburl"
)

// externalPaths are an external agent's paths made absolute against the
// directory agnogo runs in, as every relative path of the file is. The CLI
// runs in Cwd, so a relative path handed to it would otherwise point
// elsewhere than it does for agnogo.
type externalPaths struct {
	bin, cwd, configDir, codexHome string
}

// resolvePaths makes a's paths absolute and checks that cwd is a directory.
func resolvePaths(a *Agent) (externalPaths, error) {
	var p externalPaths
	var err error
	if p.cwd, err = absolute(a.Cwd); err != nil {
		return p, fmt.Errorf("cwd: %w", err)
	}
	if p.cwd != "" {
		info, err := os.Stat(p.cwd)
		if err != nil {
			return p, fmt.Errorf("cwd: %w", err)
		}
		if !info.IsDir() {
			return p, fmt.Errorf("cwd: %s is not a directory", p.cwd)
		}
	}
	// A bare name is looked up on PATH; only a path is resolved.
	p.bin = a.Bin
	if strings.ContainsRune(a.Bin, filepath.Separator) {
		if p.bin, err = absolute(a.Bin); err != nil {
			return p, fmt.Errorf("%s_bin: %w", a.Type, err)
		}
	}
	if p.configDir, err = absolute(a.ConfigDir); err != nil {
		return p, fmt.Errorf("config_dir: %w", err)
	}
	if p.codexHome, err = absolute(a.CodexHome); err != nil {
		return p, fmt.Errorf("codex_home: %w", err)
	}
	return p, nil
}

// absolute is path made absolute; "" stays "" (the default).
func absolute(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	return filepath.Abs(path)
}

// buildExternal builds an external agent (claude, codex) on its driver.
// Nothing is started: the CLI runs per turn.
func buildExternal(a *Agent, store dburl.Store, opts BuildOptions) (*external.Agent, error) {
	paths, err := resolvePaths(a)
	if err != nil {
		return nil, err
	}
	var driver external.Driver
	switch a.Type {
	case TypeClaude:
		driver, err = claude.NewDriver(claudeOptions(a, paths, store))
	case TypeCodex:
		driver, err = codex.NewDriver(codexOptions(a, paths))
	default:
		return nil, fmt.Errorf("agent type %q is not external", a.Type)
	}
	if err != nil {
		return nil, err
	}
	var schema json.RawMessage
	if a.OutputSchema != nil {
		schema = a.OutputSchema.Schema
	}
	return external.New(external.Config{
		ID:                  a.ID,
		Name:                a.Name,
		Description:         a.Description,
		Driver:              driver,
		Store:               store,
		Cwd:                 paths.cwd,
		KeepUploads:         a.KeepUploads,
		OutputSchema:        schema,
		Retries:             a.Retries,
		DelayBetweenRetries: a.DelayBetweenRetries,
		ExponentialBackoff:  a.ExponentialBackoff,
		StoreEvents:         a.StoreEvents,
		Logger:              opts.Logger,
	})
}

// claudeOptions are the claude driver's options for a. The model is left
// to the driver's default ([claude.DefaultModel]) when a has none.
func claudeOptions(a *Agent, paths externalPaths, store dburl.Store) claude.Options {
	return claude.Options{
		Bin:             paths.bin,
		Model:           a.Model,
		SystemPrompt:    a.Instructions,
		Cwd:             paths.cwd,
		PermissionMode:  a.PermissionMode,
		Tools:           a.ClaudeTools,
		AllowedTools:    a.AllowedTools,
		DisallowedTools: a.DisallowedTools,
		MCPServers:      a.MCPServers,
		StrictMCPConfig: a.StrictMCPConfig,
		ConfirmTools:    a.ConfirmTools,
		SettingSources:  a.SettingSources,
		MaxTurns:        a.MaxTurns,
		MaxBudgetUSD:    a.MaxBudgetUSD,
		Env:             a.Env,
		ConfigDir:       paths.configDir,
		ProjectKey:      cmp.Or(a.ProjectKey, a.ID),
		Transcripts:     store,
	}
}

// codexOptions are the codex driver's options for a. The model is left to
// the driver's default ([codex.DefaultModel]) when a has none.
func codexOptions(a *Agent, paths externalPaths) codex.Options {
	return codex.Options{
		Bin:              paths.bin,
		Model:            a.Model,
		Instructions:     a.Instructions,
		BaseInstructions: a.BaseInstructions,
		Sandbox:          a.Sandbox,
		ApprovalMode:     a.ApprovalMode,
		ReasoningEffort:  a.ReasoningEffort,
		Cwd:              paths.cwd,
		Ephemeral:        a.Ephemeral,
		Config:           a.CodexConfig,
		Env:              a.Env,
		CodexHome:        paths.codexHome,
	}
}
