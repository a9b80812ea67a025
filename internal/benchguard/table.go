package benchguard

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
)

// WriteTable prints the report as a table, one benchmark a row: B/op and
// allocs/op in the baseline and now with their change, and the verdict;
// then a line for each failure saying why, and a summary.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tB/op base\tB/op now\tΔ\tallocs/op base\tallocs/op now\tΔ\tverdict")
	for _, c := range r.Comparisons {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Label(),
			cell(c.Bytes.Old, c.Bytes.HasOld), cell(c.Bytes.New, c.Bytes.HasNew), changeCell(c.Bytes),
			cell(c.Allocs.Old, c.Allocs.HasOld), cell(c.Allocs.New, c.Allocs.HasNew), changeCell(c.Allocs),
			c.Status)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	for _, c := range r.Failures() {
		fmt.Fprintf(w, "%s %s: %s\n", c.Status, c.Label(), c.Reason)
	}
	newCount := len(r.with(func(s Status) bool { return s == StatusNew }))
	_, err := fmt.Fprintf(w, "%d benchmark(s): %d failed, %d improved, %d new (a rise fails above %s and %s allocs/op or %s B/op)\n",
		len(r.Comparisons), len(r.Failures()), len(r.Improvements()), newCount,
		formatRatio(r.Config.Threshold), formatValue(r.Config.AllocsSlack), formatValue(r.Config.BytesSlack))
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// cell prints a metric, or "-" when the run did not report it.
func cell(value float64, ok bool) string {
	if !ok {
		return "-"
	}
	return formatValue(value)
}

func changeCell(c Change) string {
	if !c.HasOld || !c.HasNew {
		return ""
	}
	return formatRatio(c.Ratio())
}

// formatValue prints a whole number without decimals (medians of an even
// count of runs can end in .5).
func formatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// formatRatio prints a relative change as a signed percentage.
func formatRatio(ratio float64) string {
	if math.IsInf(ratio, 1) {
		return "+inf%"
	}
	return fmt.Sprintf("%+.1f%%", ratio*100)
}
