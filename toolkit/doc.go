// Package toolkit is the SDK of agnogo's toolkits: named sets of typed
// tools with settings, declared once and used from Go and from agnogo.yaml.
//
// A toolkit package exposes a typed constructor for Go callers and a
// [Definition] for config files:
//
//	// Go
//	search, err := websearch.New(websearch.Config{Provider: "tavily", APIKey: key})
//	// agnogo.yaml
//	tools: [http, web_search: {provider: tavily, api_key: "${TAVILY_API_KEY}", cache_results: true}]
//
// [Define] builds a definition from a settings struct: a config file's
// mapping is decoded into it by its json tags, and a key it has no field
// for is refused, naming the keys there are. Every toolkit also takes the
// keys of [Options] — include_tools, exclude_tools,
// requires_confirmation_tools, external_execution_required_tools,
// stop_after_tool_call_tools, show_result_tools, cache_results, cache_ttl —
// which [Options.Apply] carries out the same way for every toolkit: a tool
// name the toolkit does not have is an error, not a silent no-op.
//
// # Network toolkits
//
// Toolkits that call an API embed [Network] in their settings: base_url
// (so tests point them at a local fake), timeout_seconds,
// max_response_bytes, and an address policy refusing loopback, private and
// link-local addresses unless allow_private or allow_hosts says otherwise.
// [Network.Client] enforces the policy where it connects, on every
// redirect, so neither a model-chosen URL nor a DNS answer that changes
// between check and fetch reaches inside the network.
//
// # Errors
//
// A failed call is an [*Error] carrying a class of run's error taxonomy —
// an API's 429 is rate_limit, 401 authentication_error, 5xx server_error, a
// refused address bad_request, a deadline timeout — and the model reads
// "web_search: rate_limit (HTTP 429): …" as the call's result. [DoJSON]
// sends a JSON request and classifies what goes wrong.
//
// # Caching
//
// With cache_results, a successful result is kept for cache_ttl seconds
// (an hour by default) per tool and arguments; calls that pause for a
// person are never cached.
package toolkit
