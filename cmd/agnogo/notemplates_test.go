package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBinaryLinksNoTemplates fails when the agnogo binary holds code of
// text/template or html/template: methods of their types, which a Parse or
// an Execute brings in. Package initialization alone is no concern (cobra
// imports text/template and only uses it through SetUsageTemplate,
// SetHelpTemplate and SetVersionTemplate, which agnogo must not call).
//
// Executing a template looks methods up by name through reflection
// (reflect.Value.MethodByName), so once it is linked the linker can no
// longer drop unused exported methods: it keeps every exported method of
// every type in the binary, some 30 MB of agnogo's.
func TestBinaryLinksNoTemplates(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	out, err := exec.CommandContext(t.Context(), goTool, "tool", "nm", binary).Output()
	require.NoError(t, err, "go tool nm")

	var found []string
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		name := fields[len(fields)-1]
		if strings.HasPrefix(name, "text/template.(") || strings.HasPrefix(name, "html/template.(") {
			found = append(found, name)
		}
	}
	if len(found) > 5 {
		found = append(found[:5], "…")
	}
	require.Empty(t, found, `the agnogo binary links template code (%s).
Executing a text/template or html/template template calls reflect.Value.MethodByName,
which stops the linker from dropping unused methods: the binary grows by tens of MB.
Write the text with strings.Builder or fmt instead (escape HTML by hand), and never call
cobra's SetUsageTemplate, SetHelpTemplate or SetVersionTemplate. To find the importers:
  go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/agnogo | grep template
and to find the functions that parse or run a template:
  go build -o /dev/null -ldflags=-dumpdep ./cmd/agnogo 2>&1 |
    grep -E -- '-> (text|html)/template\.\(\*Template\)\.(Parse|Execute|execute|ExecuteTemplate)$' |
    grep -vE '^(text|html)/template'`,
		strings.Join(found, ", "))
}
