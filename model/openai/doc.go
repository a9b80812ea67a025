// Package openai is the OpenAI provider of package model, on the official
// openai-go SDK. It speaks Chat Completions (the default) or the Responses
// API, and its BaseURL setting also serves OpenAI-compatible servers such as
// Ollama, vLLM and LM Studio.
//
//	gpt, err := openai.New(openai.Config{ID: "gpt-5-mini"})                       // key from $OPENAI_API_KEY
//	llama, err := openai.New(openai.Config{ID: "llama3.2", BaseURL: "http://localhost:11434/v1"}) // no key needed
//
// # Requests
//
// A [model.Request] becomes, on Chat Completions, system/developer, user,
// assistant (with tool_calls) and tool messages (with tool_call_id); on the
// Responses API, input messages plus function_call and function_call_output
// items. The whole conversation is sent each time, with no
// previous_response_id. Tools are function tools carrying their JSON
// Schema; a ResponseFormat becomes a json_schema response format
// (text.format on the Responses API), strict as the request says. Schemas
// keep their property order, which the model follows when it answers.
//
// # Media
//
// A user message's images are sent as image_url (input_image) parts. Its
// documents ([run.File]) go as [model.DocumentOf] classifies them: a PDF as a
// file part (input_file) carrying its content as a data URL and its name —
// on the Responses API a PDF given only by URL goes as file_url — and a text
// document (plain text, Markdown, CSV, JSON, XML, YAML, HTML, source code)
// inline as a text part, <file name="notes.md">…</file>. Audio clips go as
// input_audio parts on Chat Completions, in wav or mp3. Everything else is
// refused before any request is sent, with a [model.Error] of class
// [model.ClassBadRequest] naming the medium: other document types, audio on
// the Responses API, video on both APIs, a document or clip without content
// where content is needed. File paths are never read: the caller gives the
// content.
//
// # Streaming
//
// [Model.Stream] yields a chunk per text or reasoning delta as it arrives
// and then one final chunk with the complete [model.Response]. On Chat
// Completions it asks for stream_options.include_usage (without which a
// stream reports no usage) and assembles tool calls from their deltas: a
// call opens with its index, id and name, and its arguments arrive in pieces
// under that index. On the Responses API text comes from
// response.output_text.delta, reasoning from the reasoning summary events,
// and the reply from response.completed (or from the output items streamed
// before it, when a server leaves that empty); the response id is kept in
// ProviderData["response_id"]. Breaking the range closes the HTTP stream;
// cancelling ctx aborts the call.
//
// # Usage
//
// OpenAI counts the cached prompt prefix inside the input tokens, and so
// does [model.Response.Usage]: InputTokens is prompt_tokens / input_tokens,
// CacheReadTokens the cached_tokens within it, ReasoningTokens the
// reasoning_tokens within the output.
//
// # Errors
//
// Failures are *[model.Error] values classed for the agent's retry policy:
// by HTTP status (429 rate limit, 5xx server, 401/403 auth, other 4xx bad
// request), refined by OpenAI's error code and message into
// ClassContextWindow (context_length_exceeded) and ClassContentPolicy
// (content_filter, content_policy_violation). Failures reported inside a
// stream (response.failed, error frames) are classed by their code.
// Transport errors keep their cause, so timeouts and refused connections
// class as such; a connection dropped mid-reply is ClassConnection. A
// cancelled or expired ctx is returned as ctx.Err(). The SDK's own retries
// are off unless [Config.MaxRetries] asks for them: retrying is the agent's
// job.
//
// Tests run against the fake server of package internal/fakeopenai, which
// speaks the same wire format.
package openai
