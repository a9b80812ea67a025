package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/agnogo/agnogo/tool"
)

// Toolkit is a named set of tools and the instructions that tell the model
// how to use them.
type Toolkit struct {
	// Name is the toolkit's name, as config files list it (web_search).
	Name string
	// Tools are the toolkit's tools, in order.
	Tools []tool.Tool
	// Instructions, when not empty, are added to the agent's system
	// message.
	Instructions string
}

// DefaultCacheTTL is how long a cached result is kept unless
// [Options.CacheTTL] says otherwise: an hour, as Agno.
const DefaultCacheTTL = time.Hour

// Options are what every toolkit takes besides its own settings: which of
// its tools the agent gets, how the run loop treats their calls, and
// whether their results are cached. The zero value keeps every tool as the
// toolkit made it. Tool names are the toolkit's; a name it does not have is
// an error, so a typo is not silently ignored.
type Options struct {
	// IncludeTools keeps only these tools. Defaults to nil: all.
	IncludeTools []string `json:"include_tools,omitempty"`
	// ExcludeTools drops these tools. Defaults to nil.
	ExcludeTools []string `json:"exclude_tools,omitempty"`
	// RequiresConfirmationTools pause the run before each call until a
	// person confirms or rejects it.
	RequiresConfirmationTools []string `json:"requires_confirmation_tools,omitempty"`
	// ExternalExecutionRequiredTools pause the run: the client executes
	// the call and sends back its result.
	ExternalExecutionRequiredTools []string `json:"external_execution_required_tools,omitempty"`
	// RequiresApprovalTools wait for an admin's approval before each call
	// ([tool.Spec.RequiresApproval]): a confirmation, unless the tool
	// pauses its calls another way, that a server with an approvals store
	// lets only approvers resolve.
	RequiresApprovalTools []string `json:"requires_approval_tools,omitempty"`
	// StopAfterToolCallTools end the model loop after the call's result,
	// which becomes the run's answer.
	StopAfterToolCallTools []string `json:"stop_after_tool_call_tools,omitempty"`
	// ShowResultTools show each successful call's result to the user as
	// run content, as well as giving it to the model.
	ShowResultTools []string `json:"show_result_tools,omitempty"`
	// CacheResults keeps each successful result for CacheTTL: a call with
	// the same arguments is answered from the cache without calling the
	// tool. Failed calls are never cached. Tools that need confirmation,
	// user input or external execution are not cached. Defaults to false.
	CacheResults bool `json:"cache_results,omitempty"`
	// CacheTTL is how long a cached result is kept. Defaults to
	// [DefaultCacheTTL]. In config files, cache_ttl in seconds.
	CacheTTL time.Duration `json:"-"`
	// CacheMaxEntries bounds the cache; the oldest entries are dropped
	// first. Defaults to [DefaultCacheMaxEntries].
	CacheMaxEntries int `json:"cache_max_entries,omitempty"`
	// Now is the clock the cache reads. Defaults to time.Now.
	Now func() time.Time `json:"-"`
}

// OptionKeys are the config keys of [Options], which every toolkit's
// mapping accepts beside its own.
var OptionKeys = []string{"include_tools", "exclude_tools", "requires_confirmation_tools", "external_execution_required_tools",
	"requires_approval_tools", "stop_after_tool_call_tools", "show_result_tools", "cache_results", "cache_ttl", "cache_max_entries"}

// Apply returns k's tools as o selects and flags them. It fails when o
// names a tool k does not have, or keeps no tool at all.
func (o Options) Apply(k *Toolkit) ([]tool.Tool, error) {
	if k == nil {
		return nil, errors.New("toolkit: nil toolkit")
	}
	names := make([]string, len(k.Tools))
	for i, t := range k.Tools {
		names[i] = t.Spec().Name
	}
	var errs []error
	check := func(key string, list []string) {
		for _, name := range list {
			if !slices.Contains(names, name) {
				errs = append(errs, fmt.Errorf("%s: %s has no tool %q; its tools are %s", key, k.Name, name, strings.Join(names, ", ")))
			}
		}
	}
	check("include_tools", o.IncludeTools)
	check("exclude_tools", o.ExcludeTools)
	check("requires_confirmation_tools", o.RequiresConfirmationTools)
	check("external_execution_required_tools", o.ExternalExecutionRequiredTools)
	check("requires_approval_tools", o.RequiresApprovalTools)
	check("stop_after_tool_call_tools", o.StopAfterToolCallTools)
	check("show_result_tools", o.ShowResultTools)
	if o.CacheTTL < 0 {
		errs = append(errs, fmt.Errorf("cache_ttl: %s is negative", o.CacheTTL))
	}
	if o.CacheMaxEntries < 0 {
		errs = append(errs, fmt.Errorf("cache_max_entries: %d is negative", o.CacheMaxEntries))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var cache *Cache
	if o.CacheResults {
		cache = NewCache(o.CacheTTL, o.CacheMaxEntries, o.Now)
	}
	yes := new(true)
	flag := func(list []string, name string) *bool {
		if slices.Contains(list, name) {
			return yes
		}
		return nil
	}
	var tools []tool.Tool
	for i, t := range k.Tools {
		name := names[i]
		if len(o.IncludeTools) > 0 && !slices.Contains(o.IncludeTools, name) || slices.Contains(o.ExcludeTools, name) {
			continue
		}
		flags := tool.Flags{
			RequiresConfirmation: flag(o.RequiresConfirmationTools, name),
			ExternalExecution:    flag(o.ExternalExecutionRequiredTools, name),
			StopAfterToolCall:    flag(o.StopAfterToolCallTools, name),
			ShowResult:           flag(o.ShowResultTools, name),
			RequiresApproval:     flag(o.RequiresApprovalTools, name),
		}
		if flags.RequiresConfirmation != nil || flags.ExternalExecution != nil || flags.StopAfterToolCall != nil || flags.ShowResult != nil ||
			flags.RequiresApproval != nil {
			flagged, err := tool.WithFlags(t, flags)
			if err != nil {
				return nil, err
			}
			t = flagged
		}
		if cache != nil {
			t = cache.Wrap(t)
		}
		tools = append(tools, t)
	}
	if len(tools) == 0 {
		return nil, fmt.Errorf("%s: include_tools and exclude_tools leave no tool", k.Name)
	}
	return tools, nil
}

// Definition is a toolkit config files can name: how to build it from its
// settings. Build one with [Define].
type Definition struct {
	name        string
	description string
	toolNames   []string
	keys        []string
	build       func(ctx context.Context, settings json.RawMessage) (*Toolkit, error)
}

// Define declares a toolkit whose settings are a C, decoded from the JSON
// (or YAML) mapping a config file gives it by C's json tags; a key C has no
// field for is refused, naming the keys there are. toolNames lists the
// tools the toolkit can have, for config files that flag one of them;
// build makes the toolkit from its settings.
func Define[C any](name, description string, toolNames []string, build func(ctx context.Context, settings C) (*Toolkit, error)) Definition {
	keys := jsonKeys(reflect.TypeFor[C]())
	return Definition{
		name:        name,
		description: description,
		toolNames:   slices.Clone(toolNames),
		keys:        keys,
		build: func(ctx context.Context, raw json.RawMessage) (*Toolkit, error) {
			var settings C
			if len(raw) > 0 && string(raw) != "null" && string(raw) != "{}" {
				decoder := json.NewDecoder(strings.NewReader(string(raw)))
				decoder.DisallowUnknownFields()
				if err := decoder.Decode(&settings); err != nil {
					err = settingsError(name, err)
					if strings.Contains(err.Error(), "unknown key") {
						err = fmt.Errorf("%w; %s", err, knownKeys(keys))
					}
					return nil, err
				}
			}
			return build(ctx, settings)
		},
	}
}

// knownKeys says which keys a toolkit's settings take.
func knownKeys(own []string) string {
	if len(own) == 0 {
		return "the toolkit has no settings of its own, only " + strings.Join(OptionKeys, ", ")
	}
	return "its keys are " + strings.Join(own, ", ") + ", and " + strings.Join(OptionKeys, ", ")
}

// Name is the toolkit's name.
func (d Definition) Name() string { return d.name }

// Description says what the toolkit does.
func (d Definition) Description() string { return d.description }

// ToolNames lists the tools the toolkit can have.
func (d Definition) ToolNames() []string { return slices.Clone(d.toolNames) }

// Keys lists the toolkit's own settings keys.
func (d Definition) Keys() []string { return slices.Clone(d.keys) }

// Build makes the toolkit from settings, a JSON object with the
// toolkit's own keys and those of [Options], and returns its tools as the
// options select and flag them, and its instructions.
func (d Definition) Build(ctx context.Context, settings json.RawMessage) ([]tool.Tool, string, error) {
	own, options, err := SplitOptions(settings)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", d.name, err)
	}
	k, err := d.build(ctx, own)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", d.name, err)
	}
	if k.Name == "" {
		k.Name = d.name
	}
	tools, err := options.Apply(k)
	if err != nil {
		return nil, "", err
	}
	return tools, k.Instructions, nil
}

// SplitOptions separates the keys of [Options] from a toolkit's own in a
// settings object.
func SplitOptions(settings json.RawMessage) (json.RawMessage, Options, error) {
	var options Options
	if len(settings) == 0 || string(settings) == "null" {
		return nil, options, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(settings, &fields); err != nil {
		return nil, options, fmt.Errorf("settings: want a mapping of keys to values: %w", err)
	}
	common := map[string]json.RawMessage{}
	for _, key := range OptionKeys {
		if value, ok := fields[key]; ok {
			common[key] = value
			delete(fields, key)
		}
	}
	if ttl, ok := common["cache_ttl"]; ok {
		delete(common, "cache_ttl")
		var seconds float64
		if err := json.Unmarshal(ttl, &seconds); err != nil || seconds < 0 {
			return nil, options, fmt.Errorf("cache_ttl: want a number of seconds such as 3600, got %s", ttl)
		}
		options.CacheTTL = time.Duration(seconds * float64(time.Second))
	}
	encoded, err := json.Marshal(common)
	if err != nil {
		return nil, options, err
	}
	if err := json.Unmarshal(encoded, &options); err != nil {
		return nil, options, settingsError("", err)
	}
	own, err := json.Marshal(fields)
	if err != nil {
		return nil, options, err
	}
	return own, options, nil
}

// settingsError rewrites a JSON decoding error of a toolkit's settings for
// a person editing a config file.
func settingsError(name string, err error) error {
	var typeErr *json.UnmarshalTypeError
	msg := err.Error()
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		msg = fmt.Sprintf("%s: want %s, got a JSON %s", typeErr.Field, kindOf(typeErr.Type), typeErr.Value)
	case strings.HasPrefix(msg, "json: unknown field "):
		msg = "unknown key " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	if name == "" {
		return errors.New(msg)
	}
	return fmt.Errorf("settings: %s", msg)
}

// kindOf names what a Go type wants in JSON.
func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	default:
		return "a mapping"
	}
}

// jsonKeys lists the json names of a struct type's fields, embedded
// structs' included.
func jsonKeys(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			keys = append(keys, jsonKeys(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		keys = append(keys, name)
	}
	return keys
}

// Registry holds the toolkits config files can name. Build one with
// [NewRegistry]; it is not changed afterwards, so it is safe to share.
type Registry struct {
	defs []Definition
}

// NewRegistry returns a registry of defs. It fails on two toolkits with
// one name.
func NewRegistry(defs ...Definition) (*Registry, error) {
	r := &Registry{}
	for _, d := range defs {
		if d.name == "" || d.build == nil {
			return nil, errors.New("toolkit: a definition has no name or build function: build it with toolkit.Define")
		}
		if _, dup := r.Lookup(d.name); dup {
			return nil, fmt.Errorf("toolkit: two toolkits named %q", d.name)
		}
		r.defs = append(r.defs, d)
	}
	return r, nil
}

// Lookup returns the toolkit called name.
func (r *Registry) Lookup(name string) (Definition, bool) {
	if r == nil {
		return Definition{}, false
	}
	for _, d := range r.defs {
		if d.name == name {
			return d, true
		}
	}
	return Definition{}, false
}

// Names lists the toolkits in order.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	names := make([]string, len(r.defs))
	for i, d := range r.defs {
		names[i] = d.name
	}
	return names
}
