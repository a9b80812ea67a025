package run

import (
	"encoding/json"
	"math"
	"strconv"
)

// SessionMetrics are a session's usage summed over its runs (Agno's
// SessionMetrics), stored at session_data["session_metrics"].
type SessionMetrics struct {
	Metrics
	// Details has the same shape as [RunMetrics.Details], with each entry's
	// tokens summed across runs.
	Details map[string][]ModelMetrics `json:"details,omitempty"`
	// AdditionalMetrics are carried over from the runs.
	AdditionalMetrics map[string]any `json:"additional_metrics,omitempty"`
}

// AccumulateFromRun adds one run's metrics to the session: every token count
// and the cost are summed, details are merged by (model type, provider, id),
// and additional metrics are summed when both values are numeric, the run's
// value winning otherwise. A nil run changes nothing.
//
// Callers decide which runs count; the external-agent base, for instance,
// accumulates COMPLETED runs only.
func (s *SessionMetrics) AccumulateFromRun(run *RunMetrics) {
	if run == nil {
		return
	}
	s.Metrics.Add(run.Metrics)
	if run.AdditionalMetrics != nil {
		if s.AdditionalMetrics == nil {
			s.AdditionalMetrics = map[string]any{}
		}
		mergeAdditive(s.AdditionalMetrics, run.AdditionalMetrics)
	}
	for modelType, entries := range run.Details {
		s.Details = mergeDetails(s.Details, modelType, entries)
	}
}

// mergeDetails adds entries into details[modelType]: an entry whose (provider,
// id) is already listed is accumulated into it, any other is appended as a copy
// so the source's maps and pointers are never shared.
func mergeDetails(details map[string][]ModelMetrics, modelType string, entries []ModelMetrics) map[string][]ModelMetrics {
	if details == nil {
		details = map[string][]ModelMetrics{}
	}
	list := details[modelType]
	if list == nil {
		list = []ModelMetrics{}
	}
	for _, entry := range entries {
		found := false
		for i := range list {
			if list[i].sameModel(entry) {
				list[i].Accumulate(entry)
				found = true
				break
			}
		}
		if !found {
			list = append(list, entry.clone())
		}
	}
	details[modelType] = list
	return details
}

// mergeAdditive folds from into into: a key numeric on both sides is summed,
// any other value from from replaces what into held. Booleans count as
// non-numeric, unlike in Python where True is an int.
func mergeAdditive(into, from map[string]any) {
	for key, value := range from {
		if sum, ok := addNumbers(into[key], value); ok {
			into[key] = sum
			continue
		}
		into[key] = value
	}
}

// addNumbers sums two numbers, keeping an integer result when both are
// integers; ok is false when either is not a number.
func addNumbers(a, b any) (sum any, ok bool) {
	aInt, aFloat, aIsInt, aOK := numberValue(a)
	bInt, bFloat, bIsInt, bOK := numberValue(b)
	if !aOK || !bOK {
		return nil, false
	}
	if aIsInt && bIsInt {
		return aInt + bInt, true
	}
	return aFloat + bFloat, true
}

// numberValue reads v as a number. Integers come back in both forms; floats
// that hold a whole number count as floats, as they would in Python.
func numberValue(v any) (asInt int64, asFloat float64, isInt, ok bool) {
	switch n := v.(type) {
	case int:
		return int64(n), float64(n), true, true
	case int8:
		return int64(n), float64(n), true, true
	case int16:
		return int64(n), float64(n), true, true
	case int32:
		return int64(n), float64(n), true, true
	case int64:
		return n, float64(n), true, true
	case uint:
		return int64(n), float64(n), true, true
	case uint8:
		return int64(n), float64(n), true, true
	case uint16:
		return int64(n), float64(n), true, true
	case uint32:
		return int64(n), float64(n), true, true
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), float64(n), true, true
		}
		return 0, float64(n), false, true
	case float32:
		return 0, float64(n), false, true
	case float64:
		return 0, n, false, true
	case json.Number:
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, float64(i), true, true
		}
		if f, err := n.Float64(); err == nil {
			return 0, f, false, true
		}
	}
	return 0, 0, false, false
}
