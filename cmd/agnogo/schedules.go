package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agnogo/agnogo/scheduler"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
)

// `agnogo schedules` lists, creates and triggers the cron schedules of a
// database directly, without a server, and reads their runs. A schedule
// fires only on a server whose scheduler is enabled (scheduler: {enabled:
// true}); a trigger is written for such a server to pick up within its
// poll interval.

func (c *cli) schedulesCommand() *cobra.Command {
	var flags sessionsFlags
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "List, create and trigger cron schedules, and read their runs",
		Long: `Schedules lists, creates and triggers the cron schedules of a database, and
reads their runs, as the /schedules routes do over HTTP. A schedule starts a
run of an agent, team or workflow on its cron; only a server with
scheduler: {enabled: true} fires it.

The database is --db, else the config's db (--config, else ./agnogo.yaml when
it exists, else sqlite://./agnogo.db). --user is the owner: it scopes list
and runs, and owns what create makes (its runs are that user's).`,
		Example: `  agnogo schedules create --name daily-report --cron "0 9 * * 1-5" --agent reporter --message "Summarise yesterday" --user ana
  agnogo schedules list --user ana
  agnogo schedules trigger 0198c0de-7a1b-7c3e-9f10-5a2b3c4d5e6f --wait
  agnogo schedules runs 0198c0de-7a1b-7c3e-9f10-5a2b3c4d5e6f --json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("name a command: list, create, trigger or runs")
		},
	}
	f := cmd.PersistentFlags()
	f.StringVar(&flags.config, "config", "", "config file (YAML); defaults to ./agnogo.yaml when it exists, else the default config")
	f.StringVar(&flags.db, "db", "", "database URL, overriding the config's db (default "+defaultDB+")")
	f.StringVar(&flags.user, "user", "", "the owner: only this user's schedules, and the owner of those created (default: every user's; created unowned)")
	f.BoolVar(&flags.json, "json", false, "print JSON instead of text")
	cmd.AddCommand(c.schedulesListCommand(&flags), c.schedulesCreateCommand(&flags), c.schedulesTriggerCommand(&flags), c.schedulesRunsCommand(&flags))
	return cmd
}

// scheduleStoreOf is the store's schedules.
func scheduleStoreOf(store dburl.Store) (storage.ScheduleStore, error) {
	s, ok := store.(storage.ScheduleStore)
	if !ok {
		return nil, errors.New("this database keeps no schedules")
	}
	return s, nil
}

func (c *cli) schedulesListCommand(flags *sessionsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List schedules, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withSessions(cmd, *flags, func(ctx context.Context, store dburl.Store) error {
				schedules, err := scheduleStoreOf(store)
				if err != nil {
					return err
				}
				list, total, err := schedules.ListSchedules(ctx, storage.ScheduleQuery{UserID: flags.user, Page: storage.Page{Limit: 1000, Page: 1}})
				if err != nil {
					return fmt.Errorf("list schedules: %w", err)
				}
				out := cmd.OutOrStdout()
				if flags.json {
					return writeJSON(out, map[string]any{"data": list, "total_count": total})
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tCRON\tENDPOINT\tOWNER\tENABLED\tNEXT RUN")
				for _, s := range list {
					next := "-"
					if s.NextRunAt != nil {
						next = time.Unix(*s.NextRunAt, 0).UTC().Format(time.RFC3339)
					}
					enabled := fmt.Sprint(s.Enabled)
					if s.DisabledReason != "" {
						enabled += " (" + s.DisabledReason + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s %s\t%s\t%s\t%s\n", s.ID, s.Name, s.CronExpr, s.Timezone, s.Method, s.Endpoint, orDash(s.UserID), enabled, next)
				}
				return tw.Flush()
			})
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cli) schedulesCreateCommand(flags *sessionsFlags) *cobra.Command {
	var name, cron, timezone, agent, team, workflow, message, description string
	var maxRetries, timeout int
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a schedule that starts a run on a cron",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var endpoint string
			switch {
			case agent != "" && team == "" && workflow == "":
				endpoint = "/agents/" + agent + "/runs"
			case team != "" && agent == "" && workflow == "":
				endpoint = "/teams/" + team + "/runs"
			case workflow != "" && agent == "" && team == "":
				endpoint = "/workflows/" + workflow + "/runs"
			default:
				return usagef("name one of --agent, --team or --workflow")
			}
			if name == "" || message == "" {
				return usagef("--name and --message are required")
			}
			next, err := scheduler.NextRun(cron, timezone, time.Now())
			if err != nil {
				return usagef("--cron %q --timezone %q: %v", cron, timezone, err)
			}
			return c.withSessions(cmd, *flags, func(ctx context.Context, store dburl.Store) error {
				schedules, err := scheduleStoreOf(store)
				if err != nil {
					return err
				}
				created, err := schedules.CreateSchedule(ctx, &storage.Schedule{
					Name: name, Description: description, Method: "POST", Endpoint: endpoint, Payload: map[string]any{"message": message},
					CronExpr: cron, Timezone: timezone, TimeoutSeconds: int64(timeout), MaxRetries: int64(maxRetries), RetryDelaySeconds: 60,
					Enabled: true, NextRunAt: &next, UserID: flags.user,
				})
				if err != nil {
					return fmt.Errorf("create schedule: %w", err)
				}
				if flags.json {
					return writeJSON(cmd.OutOrStdout(), created)
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "created schedule %s (%s); next run %s\n", created.ID, created.Name, time.Unix(next, 0).UTC().Format(time.RFC3339))
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the schedule's name, unique for its owner")
	f.StringVar(&cron, "cron", "", "a five-field cron expression, such as \"0 9 * * 1-5\"")
	f.StringVar(&timezone, "timezone", "UTC", "the cron's IANA time zone")
	f.StringVar(&agent, "agent", "", "the agent whose run the schedule starts")
	f.StringVar(&team, "team", "", "the team whose run the schedule starts")
	f.StringVar(&workflow, "workflow", "", "the workflow whose run the schedule starts")
	f.StringVar(&message, "message", "", "the message the run starts with")
	f.StringVar(&description, "description", "", "what the schedule is for")
	f.IntVar(&maxRetries, "max-retries", 0, "attempts after a failed one, 0 to 10")
	f.IntVar(&timeout, "timeout", 3600, "seconds an attempt waits for its run")
	return cmd
}

func (c *cli) schedulesTriggerCommand(flags *sessionsFlags) *cobra.Command {
	var wait time.Duration
	var waitSet bool
	cmd := &cobra.Command{
		Use:   "trigger SCHEDULE_ID",
		Short: "Start a schedule's run now, for a server with the scheduler on to pick up",
		Long: `Trigger writes an attempt of the schedule due now. A server whose scheduler is
enabled picks it up within its poll interval and starts the run. With --wait,
trigger waits (up to the duration given, 10m by default) for the attempt to end
and prints it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			waitSet = cmd.Flags().Changed("wait")
			return c.withSessions(cmd, *flags, func(ctx context.Context, store dburl.Store) error {
				schedules, err := scheduleStoreOf(store)
				if err != nil {
					return err
				}
				s, err := schedules.GetSchedule(ctx, args[0], flags.user)
				if err != nil {
					return fmt.Errorf("schedule %s: %w", args[0], err)
				}
				if !s.Enabled {
					return fmt.Errorf("schedule %s is disabled: enable it first", s.Name)
				}
				now := time.Now().Unix()
				attempt, err := schedules.CreateScheduleRun(ctx, &storage.ScheduleRun{ScheduleID: s.ID, Attempt: 1, TriggeredAt: &now,
					Status: storage.ScheduleRunRunning, Input: s.Payload}, flags.user)
				if err != nil {
					return fmt.Errorf("trigger %s: %w", s.Name, err)
				}
				if waitSet {
					attempt, err = waitAttempt(ctx, schedules, s.ID, attempt.ID, flags.user, wait)
					if err != nil {
						return err
					}
				}
				return printAttempts(cmd.OutOrStdout(), flags.json, []*storage.ScheduleRun{attempt})
			})
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Minute, "wait for the attempt to end, up to 10m or --wait=DURATION")
	cmd.Flags().Lookup("wait").NoOptDefVal = "10m"
	return cmd
}

// waitAttempt polls an attempt until it ends or within passes.
func waitAttempt(ctx context.Context, store storage.ScheduleStore, scheduleID, id, user string, within time.Duration) (*storage.ScheduleRun, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	for {
		attempt, err := store.GetScheduleRun(ctx, scheduleID, id, user)
		if err == nil && attempt.Status != storage.ScheduleRunRunning {
			return attempt, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("attempt %s did not end within %s: is a server with the scheduler enabled running on this database?", id, within)
		case <-ticker.C:
		}
	}
}

func (c *cli) schedulesRunsCommand(flags *sessionsFlags) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "runs SCHEDULE_ID",
		Short: "List a schedule's runs (attempts), newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > 1000 {
				return usagef("--limit %d: want 1 to 1000", limit)
			}
			return c.withSessions(cmd, *flags, func(ctx context.Context, store dburl.Store) error {
				schedules, err := scheduleStoreOf(store)
				if err != nil {
					return err
				}
				runs, _, err := schedules.ListScheduleRuns(ctx, args[0], flags.user, storage.Page{Limit: limit, Page: 1})
				if err != nil {
					return fmt.Errorf("runs of schedule %s: %w", args[0], err)
				}
				return printAttempts(cmd.OutOrStdout(), flags.json, runs)
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "runs to show, 1 to 1000")
	return cmd
}

// printAttempts prints schedule runs as JSON or a table.
func printAttempts(out io.Writer, asJSON bool, runs []*storage.ScheduleRun) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"data": runs})
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tATTEMPT\tSTATUS\tTRIGGERED\tRUN\tERROR")
	for _, r := range runs {
		triggered := "-"
		if r.TriggeredAt != nil {
			triggered = time.Unix(*r.TriggeredAt, 0).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.Attempt, r.Status, triggered, orDash(r.RunID), orDash(strings.ReplaceAll(r.Error, "\n", " ")))
	}
	return tw.Flush()
}
