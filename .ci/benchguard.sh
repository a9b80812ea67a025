#!/usr/bin/env bash
# Allocation guard: run the benchmarks of agnogo's hot paths — an agent's
# single turn, a tool call, a 25-turn conversation on SQLite, and runs
# through the HTTP server on SQLite — and fail when their B/op or allocs/op
# rose more than 10% above .ci/bench-baseline.txt (see
# internal/benchguard). Allocations, not time: they do not depend on how
# busy the machine is. Each benchmark runs 3 times for a median, with a
# fixed iteration count, so the step takes about a minute once built.
#
# BENCHGUARD_UPDATE=1 .ci/benchguard.sh rewrites the baseline from this
# run instead; commit it with the change that moved the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
baseline=.ci/bench-baseline.txt
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
started=$SECONDS

# bench PACKAGE BENCHTIME REGEXP: builds the package's test binary and runs
# the benchmarks REGEXP selects, 3 times each, from the package's directory
# as go test would. The figures go to $work/results.txt; what the
# benchmarks log (the server logs every request) goes to $work/bench.log,
# so it cannot split a result line.
bench() {
  local pkg="$1" benchtime="$2" regexp="$3" bin
  bin="$work/$(basename "$pkg").test"
  go test -c -o "$bin" "./$pkg"
  if ! (cd "$pkg" && "$bin" -test.run '^$' -test.bench "$regexp" -test.benchmem \
      -test.benchtime "$benchtime" -test.count 3 2>>"$work/bench.log" | tee -a "$work/results.txt"); then
    echo "benchmarks of ./$pkg failed; the end of what they logged:"
    tail -n 40 "$work/bench.log"
    exit 1
  fi
}

# An agent turn against a scripted model, with and without a tool call:
# tens of microseconds each.
bench agent 200x '^(BenchmarkRunSingleTurn|BenchmarkRunToolCall)$'
# One op is 25 turns with history, each saved to SQLite: tens of
# milliseconds, and 20 conversations already average 20,000 allocations.
bench agent 20x '^BenchmarkConversation25$'
# Non-streamed runs through POST /agents/{id}/runs on SQLite: a new session
# or 10 turns of one, 1 or 32 concurrent clients. PostgreSQL is left out:
# the same server code, and a database service this guard need not wait on.
bench agentos 100x '^BenchmarkServerRuns$/^store=sqlite$'

guard=(go run ./internal/benchguard/cmd/benchguard -baseline "$baseline" -current "$work/results.txt")
if [ "${BENCHGUARD_UPDATE:-}" = 1 ]; then
  "${guard[@]}" -update
else
  "${guard[@]}"
fi
echo "allocation guard done in $((SECONDS - started)) s"
