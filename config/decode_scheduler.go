package config

import "go.yaml.in/yaml/v3"

// DefaultSchedulerPollSeconds is scheduler.poll_interval_seconds unless the
// file says otherwise.
const DefaultSchedulerPollSeconds = 15

// Scheduler is the file's scheduler: whether this server fires the cron
// schedules of /schedules. The routes exist whenever there is a database;
// without enabled nothing fires.
type Scheduler struct {
	// Enabled fires due schedules. Defaults to false.
	Enabled bool
	// PollIntervalSeconds bounds the wait between looks for due schedules
	// (the scheduler also wakes at the next known fire). Defaults to
	// [DefaultSchedulerPollSeconds].
	PollIntervalSeconds int
}

// schedulerKeys are the keys of scheduler.
var schedulerKeys = []string{"enabled", "poll_interval_seconds"}

// decodeScheduler reads scheduler.
func (d *decoder) decodeScheduler(node *yaml.Node) Scheduler {
	s := Scheduler{PollIntervalSeconds: DefaultSchedulerPollSeconds}
	if isNull(node) {
		return s
	}
	for _, f := range d.fields(node, "scheduler") {
		what := label(f.name(), "scheduler")
		switch f.name() {
		case "enabled":
			s.Enabled = d.boolean(f.value, what)
		case "poll_interval_seconds":
			s.PollIntervalSeconds = d.integer(f.value, what, 1)
		default:
			d.unknownKey(f, "scheduler", schedulerKeys)
		}
	}
	return s
}
