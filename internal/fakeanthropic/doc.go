// Package fakeanthropic is a scripted fake of the Anthropic Messages API for
// tests: an [httptest.Server] that answers POST /v1/messages in the real wire
// format, a JSON message for plain requests and server-sent events for
// "stream": true, so the official SDK (and anything built on it) runs
// unchanged against it.
//
// Each test queues the replies it wants, in order, and inspects what was sent:
//
//	srv := fakeanthropic.New(t)
//	srv.Enqueue(
//		fakeanthropic.ToolUse("get_weather", `{"city":"Paris"}`),
//		fakeanthropic.Text("Sunny in Paris.").WithUsage(fakeanthropic.Usage{InputTokens: 12, OutputTokens: 5}),
//	)
//	m, _ := anthropic.New(anthropic.Config{ID: "claude-test", BaseURL: srv.URL})
//	...
//	body := srv.Requests()[0] // the decoded JSON body of the first request
//
// Every request to /v1/messages takes the next reply. A reply is a message
// ([Text], [ToolUse], [ThinkingText], [Message] of any [Block]s), an HTTP error
// ([HTTPError], e.g. 529 overloaded_error), a message cut by an error event
// (Reply.ThenStreamError) or one held open until the client goes away
// (Reply.ThenHang). When the queue is empty the server answers 500 with an
// api_error naming the request, so a missing reply fails loudly.
//
// Streams follow the API's event order: message_start, ping, then per block
// content_block_start, its deltas (text_delta by word, thinking_delta and a
// signature_delta, input_json_delta in small pieces so clients must assemble
// the JSON) and content_block_stop, then message_delta with the stop reason and
// output tokens, and message_stop. Input and cache token counts travel in
// message_start, as the API sends them.
//
// The server is safe for concurrent use and closes itself when the test ends.
// It is modelled on the stdlib fake at shared/tools/fake_anthropic.py, which
// drives the real Claude Code CLI, but is scripted per test instead of by
// prompt directives.
package fakeanthropic
