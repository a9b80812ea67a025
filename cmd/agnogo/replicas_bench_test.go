package main

import (
	"testing"
	"time"
)

// BenchmarkKillToResume measures crash recovery across replicas: a run
// executes on replica A (Postgres and Redis, queue.max_attempts 2,
// queue.lock_grace_seconds 5) when A is killed with SIGKILL; replica B
// takes it over. One iteration is one cluster and one kill, about 10 s, so
// run it with -benchtime 1x. It reports the mean seconds from the kill until
// the run's row shows the next attempt on B (resume-s) and until it reads
// COMPLETED (complete-s); ns/op, which counts starting the replicas, is
// left out. Each iteration checks the run completed with B's answer.
func BenchmarkKillToResume(b *testing.B) {
	binary := buildBinary(b)
	var resume, complete time.Duration
	iterations := 0
	for b.Loop() {
		got := killToResume(b, newReplicaCluster(b, binary, clusterOptions{redis: true}))
		resume += got.resume
		complete += got.complete
		iterations++
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(resume.Seconds()/float64(iterations), "resume-s")
	b.ReportMetric(complete.Seconds()/float64(iterations), "complete-s")
}
