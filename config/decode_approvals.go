package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agnogo/agnogo/tool"
)

// Approvals is a native agent's approvals policy: which of its tools wait
// for an admin's approval before each call, and how long an approval stays
// pending. A tool can also require approval in its toolkit's settings
// (requires_approval_tools).
type Approvals struct {
	// Tools name the agent's tools (of its toolkits, tool entries and MCP
	// servers) whose calls require approval. Defaults to none.
	Tools []string
	// ExpiresAfter is how long an approval the agent's runs record stays
	// pending before it expires, which rejects the call (written in
	// seconds, expires_after_seconds). Defaults to 0: never.
	ExpiresAfter time.Duration
	// Line is where the key is.
	Line int
}

// approvalsKeys are the keys of an agent's approvals.
var approvalsKeys = []string{"tools", "expires_after_seconds"}

// maxApprovalExpiry bounds expires_after_seconds, to catch a misplaced
// digit: a year.
const maxApprovalExpiry = 365 * 24 * 60 * 60

// decodeApprovals reads the approvals mapping of the agent agentWhat
// names.
func (d *decoder) decodeApprovals(node *yaml.Node, agentWhat string) *Approvals {
	node = deref(node)
	if isNull(node) {
		return nil
	}
	if node.Kind != yaml.MappingNode {
		d.errorf(node, "%s: want a mapping such as {tools: [send_email], expires_after_seconds: 86400}, got %s",
			label("approvals", agentWhat), kindName(node))
		return nil
	}
	what := "approvals of " + agentWhat
	a := &Approvals{Line: node.Line}
	for _, f := range d.fields(node, what) {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "tools":
			a.Tools = d.nonEmptyStrings(f.value, keyWhat)
			for i, name := range a.Tools {
				if slices.Contains(a.Tools[:i], name) {
					d.errorf(f.value, "%s: %q is listed twice", keyWhat, name)
				}
			}
		case "expires_after_seconds":
			seconds := d.integer(f.value, keyWhat, 1)
			if seconds > maxApprovalExpiry {
				d.errorf(f.value, "%s: %d is more than a year (%d); approvals that should never expire leave it out", keyWhat, seconds, maxApprovalExpiry)
				seconds = 0
			}
			a.ExpiresAfter = time.Duration(seconds) * time.Second
		default:
			d.unknownKey(f, what, approvalsKeys)
		}
	}
	return a
}

// expiry is how long the agent's approvals stay pending; 0 is never.
func (a *Approvals) expiry() time.Duration {
	if a == nil {
		return 0
	}
	return a.ExpiresAfter
}

// apply returns the agent's tools with those the policy names requiring
// approval. Naming a tool the agent does not have is an error that lists
// the ones it has.
func (a *Approvals) apply(tools []tool.Tool) ([]tool.Tool, error) {
	if a == nil || len(a.Tools) == 0 {
		return tools, nil
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Spec().Name
	}
	var missing []string
	for _, name := range a.Tools {
		if !slices.Contains(names, name) {
			missing = append(missing, fmt.Sprintf("%q", name))
		}
	}
	if len(missing) > 0 {
		have := "it has no tools"
		if len(names) > 0 {
			have = "its tools are " + strings.Join(names, ", ")
		}
		return nil, &toolsError{err: fmt.Errorf("approvals.tools names %s, which the agent does not have; %s", strings.Join(missing, ", "), have), line: a.Line}
	}
	flagged := slices.Clone(tools)
	for i, name := range names {
		if !slices.Contains(a.Tools, name) {
			continue
		}
		t, err := tool.WithFlags(flagged[i], tool.Flags{RequiresApproval: new(true)})
		if err != nil {
			return nil, &toolsError{err: err, line: a.Line}
		}
		flagged[i] = t
	}
	return flagged, nil
}
