package agentos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/agnogo/agnogo/storage/migrate"
)

// Schema migrations over HTTP (agentos-api.md §11), the same migrations as
// `agnogo migrate`, for deployments where the server is the only thing that
// reaches the database. Migrations only move forward.

// databaseRoutes mounts the migration routes.
func (o *OS) databaseRoutes(mux *http.ServeMux) { o.mount(mux, o.databaseEndpoints()) }

// databaseEndpoints lists the migration routes with the scope each needs.
func (o *OS) databaseEndpoints() []endpoint {
	return []endpoint{
		{"POST /databases/all/migrate", "config", "write", "", o.handleMigrateAll},
		{"POST /databases/{db_id}/migrate", "config", "write", "", o.handleMigrateDatabase},
	}
}

// migrationFailed is a migration that stopped; its cause is in the log.
type migrationFailed struct{ detail string }

func (e *migrationFailed) Error() string { return e.detail }

// migrateStore migrates the server's database to target ("" for the newest
// version this build writes). A request that cannot be honoured is an
// error wrapping errBadMigration; a failing step is a *migrationFailed.
func (o *OS) migrateStore(ctx context.Context, target string) ([]migrate.TableReport, error) {
	driver, ok := o.cfg.Store.(migrate.Driver)
	if !ok {
		return nil, fmt.Errorf("%w: this database cannot be migrated from the server; run agnogo migrate", errBadMigration)
	}
	if target != "" {
		if err := migrate.ParseVersion(target); err != nil {
			return nil, fmt.Errorf("%w: target_version: %w", errBadMigration, err)
		}
		newest := ""
		for _, table := range driver.Tables() {
			if newest == "" || migrate.CompareVersions(table.Version, newest) > 0 {
				newest = table.Version
			}
		}
		if migrate.CompareVersions(target, newest) > 0 {
			return nil, fmt.Errorf("%w: target_version %s is newer than the newest schema this server writes (%s)", errBadMigration, target, newest)
		}
	}
	reports, err := migrate.Up(ctx, driver, migrate.Options{Target: target})
	if err != nil {
		o.log.Error("database migration failed", slog.String("db_id", o.cfg.DBID), slog.String("error", err.Error()))
		var step *migrate.StepError
		if errors.As(err, &step) {
			return reports, &migrationFailed{fmt.Sprintf("migrating table %s to %s failed; the server log has the cause", step.Table, step.Version)}
		}
		return reports, &migrationFailed{"the migration failed; the server log has the cause"}
	}
	for _, report := range reports {
		if target != "" && report.From != "" && migrate.CompareVersions(report.From, target) > 0 {
			return reports, fmt.Errorf("%w: table %s is at %s, newer than target_version %s; migrations only move forward", errBadMigration, report.Table, report.From, target)
		}
	}
	return reports, nil
}

// errBadMigration marks a migration request that cannot be honoured.
var errBadMigration = errors.New("cannot migrate")

// versionMessage names the version a migration went to.
func versionMessage(target string) string {
	if target == "" {
		return "latest version"
	}
	return "version " + target
}

func (o *OS) handleMigrateAll(w http.ResponseWriter, r *http.Request) {
	target := r.URL.Query().Get("target_version")
	reports, err := o.migrateStore(r.Context(), target)
	var failed *migrationFailed
	switch {
	case errors.As(err, &failed):
		writeJSON(w, http.StatusMultiStatus, map[string]any{
			"message": fmt.Sprintf("Migrated 0/1 databases to %s", versionMessage(target)),
			"failed":  map[string]string{o.cfg.DBID: failed.detail},
			"skipped": []string{},
		})
	case errors.Is(err, errBadMigration):
		writeError(w, http.StatusBadRequest, err.Error())
	case err != nil:
		o.writeStoreError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{
			"message": "All databases migrated successfully to " + versionMessage(target),
			"skipped": []string{},
			"tables":  map[string][]migrate.TableReport{o.cfg.DBID: reports},
		})
	}
}

func (o *OS) handleMigrateDatabase(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("db_id") != o.cfg.DBID {
		writeError(w, http.StatusNotFound, "Database not found")
		return
	}
	target := r.URL.Query().Get("target_version")
	reports, err := o.migrateStore(r.Context(), target)
	var failed *migrationFailed
	switch {
	case errors.As(err, &failed):
		writeError(w, http.StatusInternalServerError, "Failed to migrate database: "+failed.detail)
	case errors.Is(err, errBadMigration):
		writeError(w, http.StatusBadRequest, err.Error())
	case err != nil:
		o.writeStoreError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{
			"message": "Database migrated successfully to " + versionMessage(target),
			"tables":  reports,
		})
	}
}
