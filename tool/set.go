package tool

import (
	"errors"
	"fmt"
	"slices"
)

// Set is an immutable collection of tools with unique names, in the order
// they were given. A nil *Set is empty. Its methods return copies, so a Set is
// safe to share between agents and goroutines.
type Set struct {
	tools  []Tool
	specs  []Spec
	byName map[string]int
}

// NewSet returns a set of tools. It fails on a nil tool, an invalid name or
// two tools with the same name. Each tool's [Tool.Spec] is read once, here.
func NewSet(tools ...Tool) (*Set, error) {
	s := &Set{byName: make(map[string]int, len(tools))}
	if err := s.add(tools); err != nil {
		return nil, err
	}
	return s, nil
}

// CheckNames reports what [NewSet] would reject — a nil tool, an invalid
// name, two tools with one name — without building a set. It allocates
// nothing for tools built by this package, so constructors can validate
// eagerly and build the set on first use.
func CheckNames(tools []Tool) error {
	var small [16]string
	names := small[:0]
	seen := map[string]bool(nil)
	var errs []error
	for i, t := range tools {
		if t == nil {
			errs = append(errs, fmt.Errorf("tool %d is nil", i))
			continue
		}
		var name string
		if checked, ok := t.(interface{ checkedName() string }); ok {
			name = checked.checkedName()
		} else {
			name = t.Spec().Name
			if err := validateName(name); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		duplicate := false
		if len(tools) <= len(small) {
			duplicate = slices.Contains(names, name)
			names = append(names, name)
		} else {
			if seen == nil {
				seen = make(map[string]bool, len(tools))
			}
			duplicate = seen[name]
			seen[name] = true
		}
		if duplicate {
			errs = append(errs, fmt.Errorf("duplicate tool name %q", name))
		}
	}
	return errors.Join(errs...)
}

// With returns a new set holding the tools of s followed by tools; s is not
// changed. It fails as [NewSet] does.
func (s *Set) With(tools ...Tool) (*Set, error) {
	next := &Set{byName: make(map[string]int, s.Len()+len(tools))}
	if err := next.add(s.Tools()); err != nil {
		return nil, err
	}
	if err := next.add(tools); err != nil {
		return nil, err
	}
	return next, nil
}

func (s *Set) add(tools []Tool) error {
	var errs []error
	for i, t := range tools {
		if t == nil {
			errs = append(errs, fmt.Errorf("tool %d is nil", i))
			continue
		}
		spec := withApprovalDefaults(t.Spec())
		if err := validateName(spec.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := s.byName[spec.Name]; dup {
			errs = append(errs, fmt.Errorf("duplicate tool name %q", spec.Name))
			continue
		}
		s.byName[spec.Name] = len(s.tools)
		s.tools = append(s.tools, t)
		s.specs = append(s.specs, spec)
	}
	return errors.Join(errs...)
}

// Len returns the number of tools.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.tools)
}

// Lookup returns the tool called name.
func (s *Set) Lookup(name string) (Tool, bool) {
	if s == nil {
		return nil, false
	}
	i, ok := s.byName[name]
	if !ok {
		return nil, false
	}
	return s.tools[i], true
}

// spec returns the spec read when the tool called name was added.
func (s *Set) spec(name string) (Spec, bool) {
	if s == nil {
		return Spec{}, false
	}
	i, ok := s.byName[name]
	if !ok {
		return Spec{}, false
	}
	return s.specs[i], true
}

// ShowResult reports whether the tool called name shows its results to
// the user ([Spec.ShowResult]).
func (s *Set) ShowResult(name string) bool {
	spec, ok := s.spec(name)
	return ok && spec.ShowResult
}

// Tools returns the tools in order.
func (s *Set) Tools() []Tool {
	if s == nil {
		return nil
	}
	return slices.Clone(s.tools)
}

// Names returns the tool names in order.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	names := make([]string, len(s.specs))
	for i, spec := range s.specs {
		names[i] = spec.Name
	}
	return names
}

// Specs returns the tools' specs in order, as read when the set was built.
func (s *Set) Specs() []Spec {
	if s == nil {
		return nil
	}
	specs := make([]Spec, len(s.specs))
	for i, spec := range s.specs {
		specs[i] = cloneSpec(spec)
	}
	return specs
}

// cloneSpec copies the slices of a spec so the copy can be changed freely.
func cloneSpec(spec Spec) Spec {
	spec.Parameters = slices.Clone(spec.Parameters)
	spec.UserInputSchema = slices.Clone(spec.UserInputSchema)
	return spec
}
