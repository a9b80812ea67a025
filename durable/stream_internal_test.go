package durable

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
)

// arrival is one event reaching a follower: from Redis (live) or from the
// durable stream.
type arrival struct {
	live  bool
	index int64
}

func fromRedis(indices ...int64) []arrival {
	out := make([]arrival, len(indices))
	for i, index := range indices {
		out[i] = arrival{live: true, index: index}
	}
	return out
}

func fromStream(indices ...int64) []arrival {
	out := make([]arrival, len(indices))
	for i, index := range indices {
		out[i] = arrival{index: index}
	}
	return out
}

func then(parts ...[]arrival) []arrival {
	var out []arrival
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// replay feeds arrivals to a merge starting after after and returns the
// indices it emitted.
func replay(after int64, arrivals []arrival) (emitted []int64, m *merge) {
	m = &merge{after: after}
	emit := func(e eventlog.Entry) bool {
		emitted = append(emitted, e.Index)
		return true
	}
	for _, a := range arrivals {
		e := eventlog.Entry{Index: a.index, Name: "RunContent", Data: []byte(strconv.FormatInt(a.index, 10))}
		if a.live {
			m.live(e, emit)
		} else {
			m.durable(e, emit)
		}
	}
	return emitted, m
}

func TestMergeTakesEachIndexOnceInOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		after    int64
		arrivals []arrival
		want     []int64
		gap      bool
	}{
		{"redis alone, from the start", -1, fromRedis(0, 1, 2), []int64{0, 1, 2}, false},
		{"redis alone, after a client's index", 3, fromRedis(2, 3, 4, 5), []int64{4, 5}, false},
		{"the stream repeats what redis gave", -1, then(fromRedis(0, 1, 2), fromStream(0, 1, 2, 3)), []int64{0, 1, 2, 3}, false},
		{"redis repeats what the stream gave", -1, then(fromStream(0, 1, 2), fromRedis(1, 2, 3)), []int64{0, 1, 2, 3}, false},
		{"a dropped redis write is waited for", -1, then(fromRedis(0, 1, 3, 4), fromStream(0, 1, 2)), []int64{0, 1, 2, 3, 4}, false},
		{"held until the stream fills the gap", -1, fromRedis(0, 2, 3), []int64{0}, true},
		{"trimmed redis: the stream brings the start", -1, then(fromRedis(5, 6), fromStream(0, 1, 2, 3, 4)), []int64{0, 1, 2, 3, 4, 5, 6}, false},
		{"the stream overtakes held events", -1, then(fromRedis(0, 2, 3), fromStream(0, 1, 2, 3, 4, 5)), []int64{0, 1, 2, 3, 4, 5}, false},
		{"a real gap in the stream (a lost attempt) is crossed by the stream only", 4, then(fromRedis(8, 9), fromStream(0, 4, 8)), []int64{8, 9}, false},
		{"redis after the stream closed a gap", 4, then(fromRedis(8), fromStream(8), fromRedis(9, 10)), []int64{8, 9, 10}, false},
		{"out-of-order redis input is not held", -1, fromRedis(2, 1), nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, m := replay(tc.after, tc.arrivals)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.gap, m.gap())
		})
	}
}

// TestMergeNeverLosesOrRepeats: whatever subset of a run's events Redis
// delivers, and however its deliveries interleave with the durable
// stream's step batches, the follower gets every index once, in order.
func TestMergeNeverLosesOrRepeats(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 2000 {
		// The run's true indices, with gaps as a lost attempt leaves them.
		var truth []int64
		for index := int64(0); len(truth) < 40; index++ {
			if rng.IntN(10) > 0 {
				truth = append(truth, index)
			}
		}
		after := int64(rng.IntN(10)) - 1
		var live, stream []arrival
		for _, index := range truth {
			if rng.IntN(4) > 0 { // Redis misses about one in four
				live = append(live, arrival{live: true, index: index})
			}
			stream = append(stream, arrival{index: index})
		}
		// Interleave: the stream comes in step batches, Redis one by one.
		var arrivals []arrival
		for len(live) > 0 || len(stream) > 0 {
			if len(live) > 0 && (len(stream) == 0 || rng.IntN(3) > 0) {
				arrivals, live = append(arrivals, live[0]), live[1:]
				continue
			}
			step := min(len(stream), 1+rng.IntN(5))
			arrivals, stream = append(arrivals, stream[:step]...), stream[step:]
		}
		var want []int64
		for _, index := range truth {
			if index > after {
				want = append(want, index)
			}
		}
		got, m := replay(after, arrivals)
		require.Equal(t, want, got, "round %d", round)
		require.False(t, m.gap(), "round %d: everything held was released or forgotten", round)
	}
}

// TestMergeStopsWhenTheFollowerDoes: a follower that stops on a released
// event stops the merge.
func TestMergeStopsWhenTheFollowerDoes(t *testing.T) {
	t.Parallel()
	m := &merge{after: -1}
	var got []int64
	emit := func(e eventlog.Entry) bool {
		got = append(got, e.Index)
		return e.Index < 1
	}
	require.True(t, m.live(eventlog.Entry{Index: 2}, emit))
	require.True(t, m.live(eventlog.Entry{Index: 3}, emit))
	require.True(t, m.durable(eventlog.Entry{Index: 0}, emit))
	require.False(t, m.durable(eventlog.Entry{Index: 1}, emit), "the follower stopped at 1")
	require.Equal(t, []int64{0, 1}, got)
}

func TestRedisStreamIDs(t *testing.T) {
	t.Parallel()
	require.Equal(t, "0-1", entryID(0))
	require.Equal(t, "41-1", entryID(41))
	require.Equal(t, "0-0", idAfter(-1), "a read after 0-0 starts at index 0")
	require.Equal(t, "41-1", idAfter(41), "a read after index 41's entry starts at 42")
	require.Equal(t, "0-0", idFrom(-1))
	require.Equal(t, "42-0", idFrom(41), "an inclusive range from 42-0 starts at index 42")
}

// TestFinalEventsOfATeamStream: a follower stops at the run's own final
// event, a team's (TeamRunCompleted) as an agent's, and never at a
// member's final event passed on in a team's stream.
func TestFinalEventsOfATeamStream(t *testing.T) {
	t.Parallel()
	ends := func(name, data string) bool { return run.EndsRun("r1", name, []byte(data)) }
	require.True(t, ends("RunCompleted", `{"run_id":"r1"}`))
	require.True(t, ends("RunPaused", `{"run_id":"r1"}`))
	require.True(t, ends("TeamRunCompleted", `{"team_id":"crew","run_id":"r1"}`))
	require.True(t, ends("TeamRunCancelled", `{"team_id":"crew","run_id":"r1"}`))
	require.False(t, ends("RunContent", `{"run_id":"r1"}`))
	require.False(t, ends("RunCompleted", `{"agent_id":"writer","run_id":"member","parent_run_id":"r1"}`), "a member's end")
}
