// Package scripted is a deterministic [model.Model] for tests, examples and
// benchmarks. Its replies — text, tool calls, structured answers or errors —
// are scripted in order, one per request, and every request it receives is
// recorded so a test can assert exactly what the agent sent.
//
//	m := scripted.New(
//		scripted.ToolCall("get_weather", `{"city":"Paris"}`),
//		scripted.Text("It is sunny in Paris."),
//	)
package scripted
