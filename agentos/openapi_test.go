package agentos

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// routePattern matches a ServeMux pattern with a method: "GET /agents".
var routePattern = regexp.MustCompile(`^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) /[^ ]*$`)

// registeredPatterns reads the package's source and returns every string
// literal that is a route pattern ("GET /agents/{agent_id}"): the routes the
// server mounts, however they are registered (mux.HandleFunc, a table of
// endpoints). Register routes with literal patterns so that they are seen.
func registeredPatterns(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var patterns []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			value, err := strconv.Unquote(lit.Value)
			if err == nil && routePattern.MatchString(value) {
				patterns = append(patterns, value)
			}
			return true
		})
	}
	require.NotEmpty(t, patterns)
	return patterns
}

// getDocument fetches and decodes /openapi.json.
func getDocument(t *testing.T, o *OS) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	o.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc), "the document is JSON")
	return doc
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	o, err := New(Config{Name: "Test OS", Version: "1.2.3"})
	require.NoError(t, err)
	doc := getDocument(t, o)

	require.Equal(t, "3.1.0", doc["openapi"])
	info := doc["info"].(map[string]any)
	require.Equal(t, "Test OS", info["title"])
	require.Equal(t, "1.2.3", info["version"])

	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	require.Contains(t, schemas, "Error")
	require.Contains(t, schemas["Error"].(map[string]any)["required"], "detail")

	paths := doc["paths"].(map[string]any)
	ids := map[string]string{}
	for path, item := range paths {
		require.True(t, strings.HasPrefix(path, "/"), path)
		for method, raw := range item.(map[string]any) {
			op := raw.(map[string]any)
			where := strings.ToUpper(method) + " " + path
			id, _ := op["operationId"].(string)
			require.NotEmpty(t, id, where)
			require.NotContains(t, ids, id, "operationId %s of %s is also %s's", id, where, ids[id])
			ids[id] = where
			require.NotEmpty(t, op["summary"], where)

			// Path parameters are declared, and only those.
			var declared []string
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				if p.(map[string]any)["in"] == "path" {
					declared = append(declared, p.(map[string]any)["name"].(string))
				}
			}
			var inPath []string
			for _, seg := range strings.Split(path, "/") {
				if strings.HasPrefix(seg, "{") {
					inPath = append(inPath, strings.Trim(seg, "{}"))
				}
			}
			require.Equal(t, inPath, declared, where)

			// Every answer is described; every error has the error body.
			responses := op["responses"].(map[string]any)
			require.Contains(t, responses, "500", where)
			for status, r := range responses {
				code, err := strconv.Atoi(status)
				require.NoError(t, err)
				if code >= 400 {
					schema := r.(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"]
					require.Equal(t, map[string]any{"$ref": "#/components/schemas/Error"}, schema, "%s %s", where, status)
				}
			}
		}
	}

	// Every $ref resolves.
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				name, found := strings.CutPrefix(r, "#/components/schemas/")
				require.True(t, found, r)
				require.Contains(t, schemas, name, "$ref %s", r)
			}
			for _, child := range v {
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(doc)

	// Run creation and continuation document their form fields.
	create := paths["/agents/{agent_id}/runs"].(map[string]any)["post"].(map[string]any)
	content := create["requestBody"].(map[string]any)["content"].(map[string]any)
	require.Contains(t, content, "application/x-www-form-urlencoded")
	form := content["multipart/form-data"].(map[string]any)["schema"].(map[string]any)
	require.Equal(t, []any{"message"}, form["required"])
	require.Subset(t, keys(form["properties"].(map[string]any)), []string{"message", "stream", "session_id", "user_id", "session_state", "metadata"})
	require.Equal(t, true, form["properties"].(map[string]any)["stream"].(map[string]any)["default"])
	createOK := create["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)
	require.Contains(t, createOK, "text/event-stream")
	require.Contains(t, createOK, "application/json")

	cont := paths["/agents/{agent_id}/runs/{run_id}/continue"].(map[string]any)["post"].(map[string]any)
	form = cont["requestBody"].(map[string]any)["content"].(map[string]any)["multipart/form-data"].(map[string]any)["schema"].(map[string]any)
	require.Subset(t, keys(form["properties"].(map[string]any)), []string{"tools", "input", "continue_from", "fork", "session_id", "stream"})

	// Open routes need no credentials; the others name the bearer scheme.
	require.Equal(t, []any{}, paths["/health"].(map[string]any)["get"].(map[string]any)["security"])
	require.Equal(t, []any{map[string]any{"bearerAuth": []any{}}}, paths["/agents"].(map[string]any)["get"].(map[string]any)["security"])
	require.Contains(t, paths, "/", "the root route is /, not /{$}")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestOpenAPICoversEveryRoute fails when the server mounts a route the
// document leaves out, or the route table lists one the server does not
// mount.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	o, err := New(Config{})
	require.NoError(t, err)
	paths := getDocument(t, o)["paths"].(map[string]any)

	var documented []string
	for path, item := range paths {
		for method := range item.(map[string]any) {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	var registered []string
	for _, pattern := range registeredPatterns(t) {
		method, path, _ := strings.Cut(pattern, " ")
		r := apiRoute{method: method, path: path}
		// The literal is a route the server serves: the mux itself does not
		// answer 404 or 405 (handlers answer with JSON bodies).
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest(method, r.samplePath(), nil))
		require.False(t, muxRefused(rec), "%q looks like a route pattern, but the server does not serve it (%d %q)", pattern, rec.Code, rec.Body.String())
		registered = append(registered, method+" "+r.openAPIPath())
		require.Contains(t, documented, method+" "+r.openAPIPath(),
			"the server mounts %q but /openapi.json does not document it: add it to apiRoutes in openapi.go", pattern)
	}
	for _, r := range apiRoutes() {
		require.Contains(t, registered, r.method+" "+r.openAPIPath(),
			"apiRoutes documents %s %s, which the server does not mount", r.method, r.path)
	}
	require.Len(t, documented, len(registered), "each mounted route is documented once")
}

// muxRefused reports the ServeMux's own 404 and 405 answers.
func muxRefused(rec *httptest.ResponseRecorder) bool {
	body := rec.Body.String()
	return (rec.Code == http.StatusNotFound && body == `{"detail":"Not Found"}`) ||
		(rec.Code == http.StatusMethodNotAllowed && body == `{"detail":"Method Not Allowed"}`)
}

func TestDocsPage(t *testing.T) {
	t.Parallel()
	o, err := New(Config{Name: "Docs <OS>", Auth: AuthConfig{SecurityKey: "s3cret"}})
	require.NoError(t, err)
	for _, path := range []string{"/docs", "/docs/", "/docs/assets/swagger-ui-bundle.js", "/docs/assets/init.js", "/redoc", "/openapi.json"} {
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, "%s is open even with a security key", path)
	}
	// /docs is the explorer, loaded from the server itself.
	rec := httptest.NewRecorder()
	o.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/docs", nil))
	require.Contains(t, rec.Body.String(), `<script src="/docs/assets/swagger-ui-bundle.js">`)
	require.NotContains(t, rec.Body.String(), "https://", "nothing from a CDN")
	// /redoc is the reference page with no script.
	rec = httptest.NewRecorder()
	o.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/redoc", nil))
	require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	page := rec.Body.String()
	require.Contains(t, page, `<a href="/openapi.json">/openapi.json</a>`)
	require.Contains(t, page, "Docs &lt;OS&gt; API", "text is escaped")
	for _, fetch := range []string{"<script", "<link", "src=", "@import", "url("} {
		require.NotContains(t, page, fetch, "the page runs no script and fetches nothing")
	}
	for path, item := range getDocument(t, o)["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			require.Contains(t, page, `<code>`+path+`</code>`, "%s %s is on the page", method, path)
		}
	}
	require.Contains(t, page, "<code>message</code> <strong>required</strong>", "form fields are listed")
}
