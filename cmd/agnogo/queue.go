package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
)

// `agnogo queue` inspects and repairs the durable queue of a server's
// database from another process: it reads and requeues jobs, and executes
// nothing (a running server picks requeued jobs up).

// cliExecutorID names this process on the queue. It never executes runs,
// so it never owns any.
const cliExecutorID = "agnogo-cli"

// queueFlags are the flags every `agnogo queue` command takes.
type queueFlags struct {
	config string
	db     string
	json   bool
}

func (c *cli) queueCommand() *cobra.Command {
	var flags queueFlags
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Inspect and requeue the background runs of the durable queue",
		Long: `Queue lists, counts and requeues the jobs of the durable queue — the background
runs of an agnogo serve on the same database — as GET /queue/jobs,
GET /queue/stats and POST /queue/jobs/{id}/requeue do over HTTP.

The database is --db, else the config's db (--config, else ./agnogo.yaml when
it exists, else sqlite://./agnogo.db). These commands execute nothing: a
requeued job runs on a server serving that database.`,
		Example: `  agnogo queue list --status failed
  agnogo queue stats --json
  agnogo queue requeue 3f1c0a9e-5d7b-4c1e-9a53-0b6f2d8e4a71 --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("name a command: list, stats or requeue")
		},
	}
	f := cmd.PersistentFlags()
	f.StringVar(&flags.config, "config", "", "config file (YAML); defaults to ./agnogo.yaml when it exists, else the default config")
	f.StringVar(&flags.db, "db", "", "database URL, overriding the config's db (default "+defaultDB+")")
	f.BoolVar(&flags.json, "json", false, "print JSON instead of a table")
	cmd.AddCommand(c.queueListCommand(&flags), c.queueStatsCommand(&flags), c.queueRequeueCommand(&flags))
	return cmd
}

func (c *cli) queueListCommand(flags *queueFlags) *cobra.Command {
	var (
		statuses []string
		limit    int
		page     int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the queue's jobs, newest first",
		Long: `List prints the queue's jobs, newest first: id (the run id), status on the queue
(queued, running, paused, completed, failed, cancelled), the run's own status,
agent, session, attempts, when it was queued, and why a failed one failed.`,
		Example: `  agnogo queue list
  agnogo queue list --status failed --status cancelled --limit 100
  agnogo queue list --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			query := durable.JobQuery{Limit: limit, Page: page, SortDesc: true}
			for _, raw := range statuses {
				for value := range strings.SplitSeq(raw, ",") {
					status, err := durable.ParseJobStatus(value)
					if err != nil {
						return usagef("--status %q: want %s", value, jobStatusNames())
					}
					query.Statuses = append(query.Statuses, status)
				}
			}
			if limit < 1 || limit > durable.MaxJobsPageSize {
				return usagef("--limit %d: want 1 to %d", limit, durable.MaxJobsPageSize)
			}
			if page < 1 {
				return usagef("--page %d: want 1 or more", page)
			}
			return c.withQueue(cmd, *flags, func(q *durable.Queue) error {
				jobs, total, err := q.Jobs(cmd.Context(), query)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if flags.json {
					return writeJSONTo(out, jobList{Data: jobs, Page: page, Limit: limit, TotalCount: total})
				}
				return printJobs(out, jobs, total, page, limit)
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&statuses, "status", nil, "only jobs in this state: "+jobStatusNames()+" (repeatable)")
	f.IntVar(&limit, "limit", durable.DefaultJobsPageSize, fmt.Sprintf("jobs to show, 1 to %d", durable.MaxJobsPageSize))
	f.IntVar(&page, "page", 1, "page of --limit jobs to show, from 1")
	return cmd
}

// jobList is what `agnogo queue list --json` prints.
type jobList struct {
	Data       []durable.Job `json:"data"`
	Page       int           `json:"page"`
	Limit      int           `json:"limit"`
	TotalCount int           `json:"total_count"`
}

func (c *cli) queueStatsCommand(flags *queueFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Count the queue's jobs in each state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withQueue(cmd, *flags, func(q *durable.Queue) error {
				stats, err := q.Stats(cmd.Context())
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if flags.json {
					return writeJSONTo(out, stats)
				}
				return printStats(out, stats)
			})
		},
	}
}

func (c *cli) queueRequeueCommand(flags *queueFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "requeue RUN_ID",
		Short: "Run a failed or cancelled job again",
		Long: `Requeue queues a failed or cancelled job again; a server serving the database
runs it, going on from its last completed step (completed model and tool calls
are not made again), with exactly one more attempt.

A job that ended less than queue.lock_grace_seconds ago (60 by default) may
still be held by a worker thought dead; requeueing it then needs --force.`,
		Example: `  agnogo queue requeue 3f1c0a9e-5d7b-4c1e-9a53-0b6f2d8e4a71
  agnogo queue requeue 3f1c0a9e-5d7b-4c1e-9a53-0b6f2d8e4a71 --force --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withQueue(cmd, *flags, func(q *durable.Queue) error {
				job, err := q.Requeue(cmd.Context(), args[0], durable.RequeueOptions{Force: force})
				switch {
				case errors.Is(err, storage.ErrNotFound):
					return fmt.Errorf("no job %s on the queue (it may have been deleted by retention)", args[0])
				case errors.Is(err, durable.ErrRequeueTooSoon):
					return fmt.Errorf("%w (--force)", err)
				case err != nil:
					return err
				}
				out := cmd.OutOrStdout()
				if flags.json {
					return writeJSONTo(out, job)
				}
				_, err = fmt.Fprintf(out, "requeued %s: %s, attempt %d next; a server serving this database runs it\n", job.ID, job.Status, job.Attempts+1)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "requeue a job that ended less than queue.lock_grace_seconds ago")
	return cmd
}

// withQueue opens the database and the durable queue the flags name —
// without executing any run — and calls use with it.
func (c *cli) withQueue(cmd *cobra.Command, flags queueFlags, use func(*durable.Queue) error) error {
	ctx := cmd.Context()
	if flags.db != "" {
		if _, err := dburl.Parse(flags.db); err != nil {
			return usagef("--db: %v", err)
		}
	}
	file, err := loadRunConfig(flags.config)
	if err != nil {
		return err
	}
	if !file.Queue.Durable {
		return fmt.Errorf("%s sets queue.durable: false: background runs do not go through the durable queue, so it has no jobs", file.Source)
	}
	dbURL, err := existingDatabase(flags.db, file)
	if err != nil {
		return err
	}
	target, err := dburl.Parse(dbURL)
	if err != nil {
		return err
	}
	queueURL, err := target.QueueURL()
	if err != nil {
		return err
	}
	store, err := dburl.Open(ctx, dbURL, dburl.Options{})
	if err != nil {
		return err // a database needing migration names agnogo migrate
	}
	defer store.Close()
	q, err := durable.New(ctx, durable.Config{
		DatabaseURL: queueURL,
		Store:       store,
		Events:      eventlog.NewMemory(eventlog.MemoryConfig{}),
		ExecutorID:  cliExecutorID,
		MaxAttempts: file.Queue.MaxAttempts,
		LockGrace:   time.Duration(file.Queue.LockGraceSeconds) * time.Second,
		Logger:      slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer func() { _ = q.Shutdown(time.Second) }()
	return use(q)
}

// jobStatusNames lists the job states for messages.
func jobStatusNames() string {
	names := make([]string, 0, len(durable.JobStatuses()))
	for _, s := range durable.JobStatuses() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// printJobs prints jobs as an aligned table, then where the page is.
func printJobs(out io.Writer, jobs []durable.Job, total, page, limit int) error {
	if total == 0 {
		_, err := fmt.Fprintln(out, "no jobs")
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tRUN STATUS\tAGENT\tSESSION\tATTEMPTS\tCREATED\tERROR")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", j.ID, j.Status, cmp.Or(string(j.RunStatus), "-"), cmp.Or(j.AgentID, "-"),
			cmp.Or(j.SessionID, "-"), j.Attempts, epochText(j.CreatedAt), cmp.Or(oneLine(j.Error, 60), "-"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	first := (page-1)*limit + 1
	switch {
	case len(jobs) == 0:
		_, err := fmt.Fprintf(out, "page %d is past the end: %d %s\n", page, total, plural(total, "job", "jobs"))
		return err
	case len(jobs) < total:
		_, err := fmt.Fprintf(out, "%d–%d of %d jobs (--page, --limit for more)\n", first, first+len(jobs)-1, total)
		return err
	}
	_, err := fmt.Fprintf(out, "%d %s\n", total, plural(total, "job", "jobs"))
	return err
}

// printStats prints the counts, one state a line, then the oldest wait.
func printStats(out io.Writer, stats durable.Stats) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, s := range durable.JobStatuses() {
		fmt.Fprintf(tw, "%s\t%d\n", s, stats.Counts[s])
	}
	oldest := "none waiting"
	if stats.OldestQueuedAgeSeconds != nil {
		oldest = (time.Duration(*stats.OldestQueuedAgeSeconds) * time.Second).String()
	}
	fmt.Fprintf(tw, "oldest queued\t%s\n", oldest)
	return tw.Flush()
}

// epochText renders epoch seconds as a UTC time; "-" when unknown.
func epochText(seconds int64) string {
	if seconds == 0 {
		return "-"
	}
	return time.Unix(seconds, 0).UTC().Format("2006-01-02 15:04:05Z")
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// writeJSONTo prints v as indented JSON.
func writeJSONTo(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
