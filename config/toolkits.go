package config

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/anakin"
	"github.com/agnogo/agnogo/tools/calculator"
	"github.com/agnogo/agnogo/tools/clock"
	"github.com/agnogo/agnogo/tools/github"
	"github.com/agnogo/agnogo/tools/httptool"
	"github.com/agnogo/agnogo/tools/schedtool"
	"github.com/agnogo/agnogo/tools/slack"
	"github.com/agnogo/agnogo/tools/sqltool"
	"github.com/agnogo/agnogo/tools/webfetch"
	"github.com/agnogo/agnogo/tools/websearch"
)

// toolkits is the registry of the toolkits a native agent's tools list can
// name with settings (web_search: {provider: tavily}) or without. Built
// once; a Registry is never changed.
var toolkits = sync.OnceValue(func() *toolkit.Registry {
	registry, err := toolkit.NewRegistry(
		calculator.Definition(),
		clock.Definition(),
		httptool.Definition(),
		webfetch.Definition(),
		websearch.Definition(),
		anakin.Definition(),
		github.Definition(),
		slack.Definition(),
		sqltool.Definition(),
		schedtool.Definition(),
	)
	if err != nil {
		panic(err) // the list above is fixed: a duplicate name is a bug caught by every test
	}
	return registry
})

// buildToolkit builds a registered toolkit from its settings.
func buildToolkit(ctx context.Context, name string, settings json.RawMessage) ([]tool.Tool, string, error) {
	def, _ := toolkits().Lookup(name)
	return def.Build(ctx, settings)
}
