package scheduler

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/agnogo/agnogo/storage"
)

// cronParser reads standard five-field cron expressions and the
// descriptors (@hourly, @daily, @every 5m, …). Six- and seven-field
// expressions and croniter's L, W and # are refused.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a cron expression in a time zone (an IANA name; ""
// is UTC). Its errors read "Invalid cron expression: X" and "Invalid
// timezone: X", as the API reports them.
func ParseCron(expr, timezone string) (cron.Schedule, *time.Location, error) {
	loc, err := LoadTimezone(timezone)
	if err != nil {
		return nil, nil, err
	}
	trimmed := strings.TrimSpace(expr)
	if trimmed == "" || strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return nil, nil, fmt.Errorf("Invalid cron expression: %s", expr)
	}
	sched, err := cronParser.Parse(trimmed)
	if err != nil {
		return nil, nil, fmt.Errorf("Invalid cron expression: %s", expr)
	}
	return sched, loc, nil
}

// LoadTimezone loads an IANA time zone; "" is UTC.
func LoadTimezone(timezone string) (*time.Location, error) {
	if timezone == "" || timezone == "UTC" {
		return time.UTC, nil
	}
	if strings.ContainsAny(timezone, "\x00") {
		return nil, fmt.Errorf("Invalid timezone: %q", timezone)
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil || strings.EqualFold(timezone, "local") {
		return nil, fmt.Errorf("Invalid timezone: %s", timezone)
	}
	return loc, nil
}

// NextRun is the first fire of expr in timezone strictly after after, in
// epoch seconds, never earlier than after+1 s (the monotonic guard: a
// schedule never fires twice in one second, nor goes back in time).
func NextRun(expr, timezone string, after time.Time) (int64, error) {
	sched, loc, err := ParseCron(expr, timezone)
	if err != nil {
		return 0, err
	}
	next := sched.Next(after.In(loc))
	if next.IsZero() {
		return 0, fmt.Errorf("Invalid cron expression: %s never fires", expr)
	}
	return max(next.Unix(), after.Unix()+1), nil
}

// runEndpoint matches the endpoints that start a run: POST
// /{agents|teams|workflows}/{id}/runs, a trailing slash tolerated.
var runEndpoint = regexp.MustCompile(`^/(agents|teams|workflows)/([^/]+)/runs/?$`)

// RunTarget reports the component a run endpoint starts: its kind (agent,
// team or workflow) and id. ok is false for any other endpoint or method.
func RunTarget(method, endpoint string) (kind, id string, ok bool) {
	if !strings.EqualFold(method, "POST") {
		return "", "", false
	}
	m := runEndpoint.FindStringSubmatch(endpoint)
	if m == nil {
		return "", "", false
	}
	return strings.TrimSuffix(m[1], "s"), m[2], true
}

// Drift returns the endpoint_drift reason of a schedule whose endpoint no
// longer runs its provenance target, or "" when it does (or the schedule
// has no provenance to keep).
func Drift(s *storage.Schedule) string {
	if s.ManagedBy == "" || s.TargetType == "" || s.TargetID == "" {
		return ""
	}
	if kind, id, ok := RunTarget(s.Method, s.Endpoint); ok && kind == s.TargetType && id == s.TargetID {
		return ""
	}
	return fmt.Sprintf("endpoint_drift:%s!=%s:%s", s.Endpoint, s.TargetType, s.TargetID)
}
