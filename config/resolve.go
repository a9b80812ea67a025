package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// resolve checks what spans entries — agent, team and workflow ids, model
// references, team members, what workflow steps run — and points each
// native agent and each team at its model.
func (d *decoder) resolve(file *File) {
	firstLine := map[string]int{}
	shorthands := map[string]*Model{}
	for _, a := range file.Agents {
		if a.ID != "" {
			if line, dup := firstLine[a.ID]; dup {
				d.errorAt(a.Line, "duplicate agent id %q (first defined at line %d); agent ids must be unique", a.ID, line)
			} else {
				firstLine[a.ID] = a.Line
			}
		}
		if a.External() {
			continue
		}
		a.ResolvedModel = d.resolveModel(file, a, shorthands)
		if a.MemoryModel != "" {
			a.ResolvedMemoryModel = d.resolveReference(file, a.MemoryModel, fmt.Sprintf("memory_model of agent %q", a.ID), a.memoryModelLine, shorthands)
		}
	}
	d.resolveTeams(file, firstLine, shorthands)
	d.resolveWorkflows(file, firstLine)
}

// resolveModel finds the model a native agent names: a key of the models
// mapping, else provider:id. Agents naming the same provider:id share one
// Model.
func (d *decoder) resolveModel(file *File, a *Agent, shorthands map[string]*Model) *Model {
	return d.resolveNamed(file, fmt.Sprintf("agent %q", a.ID), a.Model, a.modelLine, a.Line, shorthands)
}

// resolveNamed finds the model of an agent or team entry (what) whose
// model key is ref at modelLine: without one, $AGNOGO_MODEL or the
// default model, reported at the entry's line.
func (d *decoder) resolveNamed(file *File, what, ref string, modelLine, line int, shorthands map[string]*Model) *Model {
	if ref == "" {
		ref = d.getenv("AGNOGO_MODEL")
		what += " (no model key, so $AGNOGO_MODEL)"
		if ref == "" {
			ref = DefaultModel
		}
		modelLine = line
	}
	return d.resolveReference(file, ref, what, modelLine, shorthands)
}

// resolveReference finds the model ref names — a key of the models mapping,
// else provider:id — reporting one that leads nowhere at line. Equal
// provider:id references share one Model.
func (d *decoder) resolveReference(file *File, ref, what string, line int, shorthands map[string]*Model) *Model {
	if m, ok := file.Models[ref]; ok {
		return m
	}
	if m, ok := shorthands[ref]; ok {
		return m
	}
	m, err := modelFromReference(ref)
	switch {
	case errors.Is(err, errNotReference):
		known := "none"
		if len(file.Models) > 0 {
			known = strings.Join(slices.Sorted(maps.Keys(file.Models)), ", ")
		}
		d.errorAt(line, "unknown model %q in %s: not a key of models (%s) nor provider:id such as openai:gpt-5-mini", ref, what, known)
		return nil
	case err != nil:
		d.errorAt(line, "%v in %s", err, what)
		return nil
	}
	shorthands[ref] = m
	return m
}

// errNotReference: a model reference without provider: in front.
var errNotReference = errors.New("not provider:id")

// modelFromReference reads a provider:id model reference such as
// openai:gpt-5-mini, anthropic:claude-sonnet-4-6 or ollama:llama3.
func modelFromReference(ref string) (*Model, error) {
	provider, id, ok := strings.Cut(ref, ":")
	if !ok || provider == "" || id == "" {
		return nil, fmt.Errorf("model %q: %w", ref, errNotReference)
	}
	m := &Model{Name: ref, Provider: provider, ID: id}
	switch provider {
	case ProviderOpenAI:
		m.API = "chat"
	case ProviderOllama:
		m.API = "chat"
		m.BaseURL = DefaultOllamaBaseURL
	case ProviderAnthropic:
	default:
		return nil, fmt.Errorf("unknown provider %q in model %q (use openai, anthropic or ollama)", provider, ref)
	}
	return m, nil
}
