// Package eventlog numbers a run's events and lets clients replay and follow
// them: the event stream behind AgentOS's SSE answers and POST …/resume.
//
// Every event appended for a run gets the run's next event_index, written
// onto the event itself, so events stored on the run row keep the same
// numbers. Indices increase strictly per run and may have gaps (a retried
// attempt keeps the counter). A run is over when its status is terminal,
// never because some index was reached.
//
// Events are encoded once, when they are numbered ([run.EncodeEvent] by
// default); every transport carries those bytes.
//
// [Memory] keeps the streams of the runs executing in this process, and
// those of recently finished runs for a while, so a client that lost its
// connection can resume. It is the transport, not the record: the run row in
// the database stays the truth, and a stream that is gone is answered from
// the events stored there.
//
// [Log] is the one way to read a run's events on any replica: it joins
// Memory, for the runs this process produces, and a [Source] (the durable
// queue's stream and Redis) for runs produced elsewhere, and switches to
// Memory when a followed run starts executing here.
package eventlog
