// Package loadtest drives an AgentOS server the way concurrent chat clients
// do and measures what they see: runs per second, latency percentiles, the
// time until the first Server-Sent Events frame, and the server process's
// resident memory.
//
// A [Client] posts runs to POST /agents/{id}/runs over keep-alive
// connections: [Client.Run] with stream=false, checking the run completed,
// and [Client.Stream] with stream=true, timing the first `event:` frame and
// checking the stream ends with RunCompleted. [Latencies] collects request
// durations from many goroutines and reports percentiles. [Drive] runs a
// fixed number of requests from a fixed number of clients, each client
// sending its next request as soon as its previous one is answered (a closed
// loop), and [ReadMemory] reads VmRSS and VmHWM from /proc.
//
// The benchmarks that use it are BenchmarkServerRuns and
// BenchmarkServerFirstEvent in agentos (in-process, scripted model) and
// BenchmarkServeBinary here (the built agnogo binary, memory included);
// docs/benchmarks.md reports their figures and the commands behind them.
package loadtest
