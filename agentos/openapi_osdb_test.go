package agentos

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage/sqlite"
)

// osdbDocumented are the routes of the features kept in the OS database,
// by tag, as /openapi.json lists them.
var osdbDocumented = map[string][]string{
	"Schedules": {
		"GET /schedules", "POST /schedules", "GET /schedules/{schedule_id}", "PATCH /schedules/{schedule_id}",
		"DELETE /schedules/{schedule_id}", "POST /schedules/{schedule_id}/enable", "POST /schedules/{schedule_id}/disable",
		"POST /schedules/{schedule_id}/trigger", "GET /schedules/{schedule_id}/runs", "GET /schedules/{schedule_id}/runs/{run_id}",
	},
	"Approvals": {
		"GET /approvals", "GET /approvals/count", "GET /approvals/{approval_id}/status", "GET /approvals/{approval_id}",
		"POST /approvals/{approval_id}/resolve", "DELETE /approvals/{approval_id}",
	},
	"Service Accounts": {"POST /service-accounts", "GET /service-accounts", "DELETE /service-accounts/{account_id}"},
}

// TestOpenAPIDocumentsOSDatabaseFeatures: the schedule, approval and
// service-account routes are documented whether the store keeps them (the
// routes are mounted) or not (every one answers 503, which the document
// says), with their tags and schemas.
func TestOpenAPIDocumentsOSDatabaseFeatures(t *testing.T) {
	t.Parallel()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	for name, cfg := range map[string]Config{"without a database": {}, "with a database": {Store: store}} {
		t.Run(name, func(t *testing.T) {
			o, err := New(cfg)
			require.NoError(t, err)
			paths := getDocument(t, o)["paths"].(map[string]any)
			for tag, routes := range osdbDocumented {
				for _, route := range routes {
					method, path, _ := strings.Cut(route, " ")
					item, ok := paths[path].(map[string]any)
					require.True(t, ok, "%s is documented", route)
					op, ok := item[strings.ToLower(method)].(map[string]any)
					require.True(t, ok, "%s is documented", route)
					require.Equal(t, []any{tag}, op["tags"], route)
					responses := op["responses"].(map[string]any)
					require.Contains(t, responses["503"].(map[string]any)["description"], "not available: pass a `db`", route)
				}
			}
			create := paths["/schedules"].(map[string]any)["post"].(map[string]any)
			require.Equal(t, ref("ScheduleCreate"), create["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"])
			require.Contains(t, create["responses"], "201")
			require.Contains(t, create["responses"], "409")
			mint := paths["/service-accounts"].(map[string]any)["post"].(map[string]any)
			require.Equal(t, ref("ServiceAccountCreateResponse"),
				mint["responses"].(map[string]any)["201"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"])
		})
	}
}

// TestOpenAPISchemasMatchOSDatabaseAnswers: each documented answer of the
// schedule, approval and service-account routes has exactly the fields its
// handler writes.
func TestOpenAPISchemasMatchOSDatabaseAnswers(t *testing.T) {
	t.Parallel()
	for schema, answer := range map[string]any{
		"ScheduleResponse":       scheduleSchema{},
		"ScheduleStateResponse":  scheduleStateSchema{},
		"ScheduleRunResponse":    scheduleRunSchema{},
		"ApprovalResponse":       approvalSchema{},
		"ApprovalStatus":         approvalStatusSchema{},
		"ServiceAccountResponse": serviceAccountResponse{},
		"ServiceAccountScope":    scopeSchema{},
	} {
		properties := apiSchemas()[schema].(map[string]any)["properties"].(map[string]any)
		require.ElementsMatch(t, jsonFields(reflect.TypeOf(answer)), keys(properties), schema)
	}
	// The create answer is the account and its token.
	created := jsonFields(reflect.TypeOf(serviceAccountCreateResponse{}))
	require.Contains(t, created, "token")
	account := apiSchemas()["ServiceAccountResponse"].(map[string]any)["properties"].(map[string]any)
	require.ElementsMatch(t, slices.DeleteFunc(created, func(f string) bool { return f == "token" }), keys(account))
}

// jsonFields lists the JSON names of a struct's fields, those of embedded
// structs included.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		field := typ.Field(i)
		if field.Anonymous {
			out = append(out, jsonFields(field.Type)...)
			continue
		}
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
