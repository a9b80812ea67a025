package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// The daily aggregates of agno_metrics are a sum over the stored rows:
// each run whose status is in storage.MetricsStatuses counts on the day it
// was created, and each session on the day it was created while one of its
// own runs (not a fork's copy) counts. A run write that changes what its
// row counts for adds the difference to the aggregate rows it touches, in
// the same transaction: it subtracts what the stored row counted for (read
// just before it is overwritten) and adds what the new row counts for, and
// when the run is the one that makes its session count, or stop counting,
// adds or subtracts the session. Writing the same run twice so adds
// nothing, and the aggregates never depend on how many times, or in which
// order, a run was saved. Rows no run write goes through (the copies of a
// fork, legacy imports, rows written before the aggregates existed) count
// nothing until a refresh recomputes their day.

// aggregationDaily is the aggregation_period of the rows agnogo maintains.
const aggregationDaily = "daily"

// metricsKey names one aggregate row: a user ("" for none) and a UTC day.
type metricsKey struct {
	userID, date string
}

// modelKey names a model in model_metrics.
type modelKey struct {
	id, provider string
}

// The kinds of runs and sessions, as indexes into the count arrays.
const (
	kindAgent = iota
	kindTeam
	kindWorkflow
	kinds
)

// runKind maps a run type to its count index; anything unknown counts as an
// agent run, as a run without a type is stored as one.
func runKind(t storage.RunType) int {
	switch t {
	case storage.RunTypeTeam:
		return kindTeam
	case storage.RunTypeWorkflow:
		return kindWorkflow
	}
	return kindAgent
}

// sessionKind maps a session type to its count index.
func sessionKind(t storage.SessionType) int {
	switch t {
	case storage.SessionTypeTeam:
		return kindTeam
	case storage.SessionTypeWorkflow:
		return kindWorkflow
	}
	return kindAgent
}

// epochDay is the UTC day of an epoch-seconds time, YYYY-MM-DD.
func epochDay(epoch int64) string { return time.Unix(epoch, 0).UTC().Format(time.DateOnly) }

// metricsDelta is a signed change to one aggregate row.
type metricsDelta struct {
	runs, sessions [kinds]int
	tokens         run.Metrics
	models         map[modelKey]int
}

// addModel adds n runs of model, forgetting a model whose count comes to
// zero.
func (d *metricsDelta) addModel(model modelKey, n int) {
	if d.models == nil {
		d.models = map[modelKey]int{}
	}
	if d.models[model] += n; d.models[model] == 0 {
		delete(d.models, model)
	}
}

// isZero reports whether the delta changes nothing. A cost that came back
// to zero changes nothing either: a run saved again with the cost it had
// leaves one behind.
func (d *metricsDelta) isZero() bool {
	counts := d.tokens
	counts.Cost = nil
	return d.runs == [kinds]int{} && d.sessions == [kinds]int{} && counts == (run.Metrics{}) && len(d.models) == 0 &&
		(d.tokens.Cost == nil || *d.tokens.Cost == 0)
}

// active reports whether a row holding d counts any run or session.
func (d *metricsDelta) active() bool { return d.runs != [kinds]int{} || d.sessions != [kinds]int{} }

// addTokens adds sign times m into dst. A cost stays nil while neither
// side has one, as [run.Metrics.Add] keeps it.
func addTokens(dst *run.Metrics, m run.Metrics, sign int) {
	s := int64(sign)
	dst.InputTokens += s * m.InputTokens
	dst.OutputTokens += s * m.OutputTokens
	dst.TotalTokens += s * m.TotalTokens
	dst.AudioInputTokens += s * m.AudioInputTokens
	dst.AudioOutputTokens += s * m.AudioOutputTokens
	dst.AudioTotalTokens += s * m.AudioTotalTokens
	dst.CacheReadTokens += s * m.CacheReadTokens
	dst.CacheWriteTokens += s * m.CacheWriteTokens
	dst.ReasoningTokens += s * m.ReasoningTokens
	if m.Cost != nil {
		var sum float64
		if dst.Cost != nil {
			sum = *dst.Cost
		}
		sum += float64(sign) * *m.Cost
		dst.Cost = &sum
	}
}

// runUsage is what one run row counts for in the aggregates.
type runUsage struct {
	key    metricsKey
	kind   int
	tokens run.Metrics
	model  modelKey
}

// newRunUsage is what a run row with these columns counts for, or nil when
// its status does not count.
func newRunUsage(status run.Status, userID string, createdAt int64, runType storage.RunType, out *run.Output) *runUsage {
	if !storage.CountsInMetrics(status) {
		return nil
	}
	u := &runUsage{key: metricsKey{userID, epochDay(createdAt)}, kind: runKind(runType)}
	if out != nil {
		if out.Metrics != nil {
			u.tokens = out.Metrics.Metrics
		}
		u.model = modelKey{out.Model, out.ModelProvider}
	}
	return u
}

// metricsChanges collects the aggregate changes of one transaction, to be
// applied at its end by [Store.applyMetrics].
type metricsChanges map[metricsKey]*metricsDelta

func (c metricsChanges) delta(key metricsKey) *metricsDelta {
	d, ok := c[key]
	if !ok {
		d = &metricsDelta{}
		c[key] = d
	}
	return d
}

// addRun adds sign times a run's usage; a nil usage changes nothing.
func (c metricsChanges) addRun(u *runUsage, sign int) {
	if u == nil {
		return
	}
	d := c.delta(u.key)
	d.runs[u.kind] += sign
	addTokens(&d.tokens, u.tokens, sign)
	if u.model.id != "" {
		d.addModel(u.model, sign)
	}
}

// addSession adds sign times a session, on the day it was created.
func (c metricsChanges) addSession(userID string, sessionType storage.SessionType, createdAt int64, sign int) {
	c.delta(metricsKey{userID, epochDay(createdAt)}).sessions[sessionKind(sessionType)] += sign
}

// The count columns of agno_metrics, users_count last.
const metricsCountColumns = "agent_runs_count, team_runs_count, workflow_runs_count, agent_sessions_count, team_sessions_count, workflow_sessions_count, users_count"

// applyMetrics writes a transaction's aggregate changes, one row at a time
// in (user, day) order, so that two transactions that may wait for each
// other's rows take them in the same order and never wait in a cycle.
func (s *Store) applyMetrics(ctx context.Context, tx Conn, changes metricsChanges) error {
	keys := make([]metricsKey, 0, len(changes))
	for key, d := range changes {
		if !d.isZero() {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(a, b metricsKey) int { return cmp.Or(cmp.Compare(a.userID, b.userID), cmp.Compare(a.date, b.date)) })
	for _, key := range keys {
		if err := s.addMetrics(ctx, tx, key, changes[key]); err != nil {
			return fmt.Errorf("update metrics of %s for user %q: %w", key.date, key.userID, err)
		}
	}
	return nil
}

// addMetrics adds d to one aggregate row. SQLite, whose single writer
// serializes transactions, inserts the row or adds to it in one statement
// whose arithmetic the database does ([Store.metricsUpsertStatement]).
// Postgres would keep a row it updates locked until the commit (its WAL
// flush included), so every run of one user ending on one day would queue
// on that row: there the change is inserted as a pending row of its own,
// which never waits, and folded into the day's row later (see
// [Store.CompactMetrics]).
func (s *Store) addMetrics(ctx context.Context, tx Conn, key metricsKey, d *metricsDelta) error {
	if s.dialect == Postgres {
		// Nothing reads the pending row back: it goes with the COMMIT.
		defer s.compactor.wake()
		return s.writeMetrics(ctx, tx, s.stmts.metricsPending, key, pendingPeriodPrefix+s.newID(), d, true)
	}
	return s.writeMetrics(ctx, tx, s.stmts.metricsUpsert, key, aggregationDaily, d, false)
}

// writeMetrics runs statement ([Store.metricsUpsertStatement] or
// [Store.metricsInsertStatement]) with d as the row of key in period; with
// atCommit as the transaction's last statement (see [execAtCommit]).
func (s *Store) writeMetrics(ctx context.Context, tx Conn, statement string, key metricsKey, period string, d *metricsDelta, atCommit bool) error {
	tokenDoc, err := json.Marshal(storedTokenMetrics(d.tokens))
	if err != nil {
		return fmt.Errorf("encode token_metrics: %w", err)
	}
	models := make([]storage.ModelCount, 0, len(d.models))
	for model, n := range d.models {
		models = append(models, storage.ModelCount{ModelID: model.id, ModelProvider: model.provider, Count: n})
	}
	modelDoc, err := json.Marshal(models)
	if err != nil {
		return fmt.Errorf("encode model_metrics: %w", err)
	}
	// A pending row counts no user: readers count a user once per day.
	users := 0
	if key.userID != "" && d.active() && period == aggregationDaily {
		users = 1
	}
	now := s.nowSeconds()
	args := []any{s.newID(),
		d.runs[kindAgent], d.runs[kindTeam], d.runs[kindWorkflow], d.sessions[kindAgent], d.sessions[kindTeam], d.sessions[kindWorkflow], users,
		string(tokenDoc), string(modelDoc), key.date, period, key.userID, now, now, key.date < epochDay(now)}
	if atCommit {
		return execAtCommit(ctx, tx, statement, args...)
	}
	_, err = tx.Exec(ctx, statement, args...)
	return err
}

// pendingPeriodPrefix starts the aggregation_period of a pending row: a
// change to a (user, day) row, written beside it under a period of its own
// so that it never conflicts with another. Readers and refreshes count a
// pending row with its day's row until [Store.CompactMetrics] folds it in.
// Only Postgres writes them.
const pendingPeriodPrefix = "agnogo-pending:"

// pendingRows is the condition that selects the pending rows, written as
// the partial index idx_agno_metrics_pending is, so the planner uses it.
const pendingRows = "aggregation_period LIKE '" + pendingPeriodPrefix + "%'"

// metricsInsertStatement is the statement that inserts a change as a
// pending row, with the arguments of [Store.metricsUpsertStatement].
func (s *Store) metricsInsertStatement() string {
	return fmt.Sprintf(`INSERT INTO %s (id, %s, token_metrics, model_metrics, date, aggregation_period, user_id, created_at, updated_at, completed)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, %[3]s, %[3]s, %[4]s, ?, ?, ?, ?, ?)`, s.tables.metrics, metricsCountColumns, s.dialect.jsonArg(), s.dialect.dateArg())
}

// tokenKeys are the counts of token_metrics, as Agno names them.
var tokenKeys = []string{"input_tokens", "output_tokens", "total_tokens", "audio_input_tokens", "audio_output_tokens",
	"audio_total_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"}

// metricsUpsertStatement is the statement that adds a change to one
// aggregate row: it inserts the row with the change's figures (token and
// model documents as [Store.addMetrics] encodes them), or adds them to the
// stored row: each count, each token count, the cost (which stays absent
// while neither side has one), each model's count (a model whose count
// comes to zero is dropped). users_count is 1 on a user's row while the
// row counts anything; the row without a user keeps the count it has (0,
// unless Agno wrote it before it scoped rows by user).
func (s *Store) metricsUpsertStatement() string {
	d := s.dialect
	counts := strings.Split(metricsCountColumns, ", ")[:kinds*2]
	var set, active []string
	for _, c := range counts {
		set = append(set, fmt.Sprintf("%[1]s = cur.%[1]s + excluded.%[1]s", c))
		active = append(active, fmt.Sprintf("cur.%[1]s + excluded.%[1]s <> 0", c))
	}
	set = append(set, fmt.Sprintf("users_count = CASE WHEN cur.user_id = '' THEN cur.users_count WHEN %s THEN 1 ELSE 0 END", strings.Join(active, " OR ")))
	var tokens []string
	for _, key := range tokenKeys {
		tokens = append(tokens, "'"+key+"'",
			fmt.Sprintf("COALESCE(%s, 0) + COALESCE(%s, 0)", d.jsonNumber("cur.token_metrics", key), d.jsonNumber("excluded.token_metrics", key)))
	}
	oldCost, newCost := d.jsonNumber("cur.token_metrics", "cost"), d.jsonNumber("excluded.token_metrics", "cost")
	tokens = append(tokens, "'cost'", fmt.Sprintf("CASE WHEN %[1]s IS NULL AND %[2]s IS NULL THEN NULL ELSE COALESCE(%[1]s, 0) + COALESCE(%[2]s, 0) END", oldCost, newCost))
	set = append(set,
		"token_metrics = "+d.jsonObjectWithoutNulls(tokens...),
		"model_metrics = "+d.jsonAddModelCounts("cur.model_metrics", "excluded.model_metrics"),
		"updated_at = excluded.updated_at", "completed = excluded.completed")
	return fmt.Sprintf(`INSERT INTO %s AS cur (id, %s, token_metrics, model_metrics, date, aggregation_period, user_id, created_at, updated_at, completed)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, %[3]s, %[3]s, %[4]s, ?, ?, ?, ?, ?)
ON CONFLICT (user_id, date, aggregation_period) DO UPDATE SET
	%[5]s`, s.tables.metrics, metricsCountColumns, d.jsonArg(), d.dateArg(), strings.Join(set, ",\n\t"))
}

// storedTokenMetrics is token_metrics as Agno stores it: every count,
// zeros included, and the cost when one was reported.
type storedTokenMetrics struct {
	InputTokens       int64    `json:"input_tokens"`
	OutputTokens      int64    `json:"output_tokens"`
	TotalTokens       int64    `json:"total_tokens"`
	AudioInputTokens  int64    `json:"audio_input_tokens"`
	AudioOutputTokens int64    `json:"audio_output_tokens"`
	AudioTotalTokens  int64    `json:"audio_total_tokens"`
	CacheReadTokens   int64    `json:"cache_read_tokens"`
	CacheWriteTokens  int64    `json:"cache_write_tokens"`
	ReasoningTokens   int64    `json:"reasoning_tokens"`
	Cost              *float64 `json:"cost,omitempty"`
}

// modelCounts lists a model map, most used first; entries that do not count
// a run are left out.
func modelCounts(models map[modelKey]int) []storage.ModelCount {
	out := make([]storage.ModelCount, 0, len(models))
	for model, n := range models {
		if n > 0 {
			out = append(out, storage.ModelCount{ModelID: model.id, ModelProvider: model.provider, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b storage.ModelCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.ModelID, b.ModelID), cmp.Compare(a.ModelProvider, b.ModelProvider))
	})
	return out
}

// decodeTokenMetrics reads a token_metrics document. Counts may be written
// with a fraction (12.0) by whoever wrote the row; an unreadable document
// counts as zero rather than failing the read.
func decodeTokenMetrics(doc []byte) run.Metrics {
	var stored struct {
		InputTokens       float64  `json:"input_tokens"`
		OutputTokens      float64  `json:"output_tokens"`
		TotalTokens       float64  `json:"total_tokens"`
		AudioInputTokens  float64  `json:"audio_input_tokens"`
		AudioOutputTokens float64  `json:"audio_output_tokens"`
		AudioTotalTokens  float64  `json:"audio_total_tokens"`
		CacheReadTokens   float64  `json:"cache_read_tokens"`
		CacheWriteTokens  float64  `json:"cache_write_tokens"`
		ReasoningTokens   float64  `json:"reasoning_tokens"`
		Cost              *float64 `json:"cost"`
	}
	if len(doc) > 0 {
		_ = json.Unmarshal(doc, &stored)
	}
	count := func(v float64) int64 { return int64(math.Round(v)) }
	return run.Metrics{
		InputTokens: count(stored.InputTokens), OutputTokens: count(stored.OutputTokens), TotalTokens: count(stored.TotalTokens),
		AudioInputTokens: count(stored.AudioInputTokens), AudioOutputTokens: count(stored.AudioOutputTokens), AudioTotalTokens: count(stored.AudioTotalTokens),
		CacheReadTokens: count(stored.CacheReadTokens), CacheWriteTokens: count(stored.CacheWriteTokens), ReasoningTokens: count(stored.ReasoningTokens),
		Cost: stored.Cost,
	}
}

// decodeModelMetrics reads a model_metrics document: Agno's list, or the
// empty object a row created without models holds.
func decodeModelMetrics(doc []byte) map[modelKey]int {
	var list []struct {
		ModelID       string  `json:"model_id"`
		ModelProvider string  `json:"model_provider"`
		Count         float64 `json:"count"`
	}
	if trimmed := strings.TrimSpace(string(doc)); !strings.HasPrefix(trimmed, "[") || json.Unmarshal(doc, &list) != nil {
		return nil
	}
	models := make(map[modelKey]int, len(list))
	for _, m := range list {
		models[modelKey{m.ModelID, m.ModelProvider}] += int(math.Round(m.Count))
	}
	return models
}

// mergeModels adds a model map into dst, creating it when nil.
func mergeModels(dst *map[modelKey]int, src map[modelKey]int) {
	if len(src) == 0 {
		return
	}
	if *dst == nil {
		*dst = make(map[modelKey]int, len(src))
	}
	for model, n := range src {
		(*dst)[model] += n
	}
}

// nullInt scans a nullable integer column into an int.
type nullInt struct{ n *int }

// Scan reads an integer column into the int; NULL reads as 0.
func (n nullInt) Scan(src any) error {
	var v int64
	if err := (nullInt64{&v}).Scan(src); err != nil {
		return err
	}
	*n.n = int(v)
	return nil
}
