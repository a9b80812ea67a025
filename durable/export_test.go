package durable

import "time"

// Crash stops q as a crash would: no drain, no hand-back; its heartbeat
// simply stops, and its runs wait for a replica to take them over.
func Crash(q *Queue) { _ = q.halt(false, 50*time.Millisecond) }
