// Package fakeopenai is a fake OpenAI API for tests: an httptest server that
// speaks the real wire format of Chat Completions and the Responses API and
// answers each request with the next scripted reply.
//
// A test starts one with [New], scripts the replies the model will give, runs
// the code under test against [Server.URL] (the base URL, ending in /v1), and
// then asserts what was sent with [Server.Requests]:
//
//	srv := fakeopenai.New(t)
//	srv.Enqueue(
//		fakeopenai.ToolCalls(fakeopenai.Call("get_weather", `{"city":"Paris"}`)),
//		fakeopenai.Text("It is sunny in Paris.").WithUsage(fakeopenai.Usage{InputTokens: 120, OutputTokens: 8}),
//	)
//	m, _ := openai.New(openai.Config{ID: "gpt-5-mini", BaseURL: srv.URL})
//	// … run the agent …
//	body := srv.Requests()[1].Body // the second request, with the tool result
//
// # Wire format
//
// POST /v1/chat/completions answers a chat.completion object, or, when the
// request streams, chat.completion.chunk frames (`data: {…}`): the role, the
// text word by word, each tool call opened with its id and name and its
// arguments in pieces of a few characters, the finish_reason, the usage chunk
// when stream_options.include_usage is set, and `data: [DONE]`.
//
// POST /v1/responses answers a response object, or, when the request
// streams, `event: <type>` + `data: {…}` frames in OpenAI's order:
// response.created, response.in_progress, then for each output item
// response.output_item.added, its content (content_part.added,
// output_text.delta…, output_text.done, content_part.done for a message;
// function_call_arguments.delta… and .done for a function call;
// reasoning_summary_part / reasoning_summary_text events for reasoning),
// response.output_item.done, and finally response.completed carrying the
// usage (input_tokens_details.cached_tokens,
// output_tokens_details.reasoning_tokens).
//
// # Replies
//
// [Text], [JSON] and [ToolCalls] make answers; [Reply.WithText],
// [Reply.WithToolCalls], [Reply.WithReasoning] and [Reply.WithUsage] refine
// them. [Error], [RawError] and [ContextLengthExceeded] answer with an HTTP
// error status; [Failed] fails after the stream has begun. [Reply.StallAfter]
// stops a reply mid-stream until the client goes away, for cancellation
// tests; [Server.Disconnects] counts those departures. [Reply.CutAfter]
// drops the connection mid-stream.
//
// Every POST to a model endpoint takes the next reply, errors included; when
// the queue is empty the server answers HTTP 500 with code fake_queue_empty
// and a message saying so. Unknown routes answer 404. The server is safe for
// concurrent use and stops when the test ends.
package fakeopenai
