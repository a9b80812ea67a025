// Package anthropic is the Anthropic Messages provider of package model, on the
// official anthropic-sdk-go SDK (v2).
//
// Create a model with [New] and use it wherever a [model.Model] goes:
//
//	claude, err := anthropic.New(anthropic.Config{ID: "claude-sonnet-4-5"}) // key from ANTHROPIC_API_KEY
//	if err != nil {
//		return err
//	}
//	response, err := claude.Invoke(ctx, &model.Request{Messages: messages})
//
// # Requests
//
// System and developer messages go to the system parameter; user and
// assistant messages become turns. An assistant's tool calls become tool_use
// blocks whose input is the parsed JSON arguments, and tool-result messages
// become tool_result blocks (is_error when the tool failed), consecutive
// results merged into one user message. Tools are sent with their parameters
// as input_schema, verbatim. Tool choice maps "auto", "none", "required" (the
// API's "any") and a tool's name.
//
// # Media
//
// A user message's images become image blocks, and its documents
// ([run.File]) document blocks titled with the file's name, as
// [model.DocumentOf] classifies them: a PDF from its content (base64) or,
// without content, its URL; a text document (plain text, Markdown, CSV, JSON,
// XML, YAML, HTML, source code) as a plain-text source. A document's file
// path is not read: the caller gives the content. Audio, video, other
// document types and documents without content are refused before any
// request is sent, with a [model.Error] of class [model.ClassBadRequest]
// naming the medium.
//
// # Structured output
//
// A [model.ResponseFormat] is implemented as a forced tool call, which works
// on every Claude model: the request gets a synthetic tool named after the
// schema (e.g. "WeatherReport"; "structured_output" when the name is empty,
// renamed if a real tool has the name) whose input_schema is the schema, and
// tool_choice forces it. When the request also has real tools, tool_choice is
// "any" instead, so the model can still call them before it answers. The
// synthetic call's input JSON is returned as [model.Response.Content], never
// as a tool call, and a stop reason of tool_use becomes end_turn when it was
// the only call. While streaming, the answer's JSON arrives as ContentDelta.
//
// # Responses and usage
//
// Text blocks are concatenated into Content and thinking into
// ReasoningContent; thinking blocks are also kept in ProviderData under
// [ThinkingBlocksKey] and sent back with the assistant message. StopReason is
// the API's stop_reason (end_turn, tool_use, max_tokens, …). Usage follows the
// reference's conventions for Anthropic: InputTokens exclude the cached
// prefix, which is reported as CacheReadTokens (cache_read_input_tokens) and
// CacheWriteTokens (cache_creation_input_tokens); TotalTokens is input plus
// output, as Agno counts it.
//
// # Errors
//
// Every failure of a call is a [*model.Error] with Provider "Anthropic". API
// errors keep their status and are classified by [model.ClassifyStatus],
// refined: 529 (overloaded_error) is a server error, to retry, and a 400 whose
// message says the prompt is too long is [model.ClassContextWindow]. An error
// event in the middle of a stream (e.g. overloaded_error) is classified by
// its type, a server error by default. Transport failures keep their cause
// (a refused connection is [model.ClassConnection]). The SDK never retries on
// its own unless [Config.MaxRetries] says so: retries belong to the run loop.
// Cancelling ctx aborts the request, and breaking out of a Stream closes the
// connection.
//
// # API version
//
// The SDK sends anthropic-version 2026-10-21 and the key as a bearer token.
// That API version rejects temperature, so [Config.Temperature] is only for
// endpoints that still accept it.
package anthropic
