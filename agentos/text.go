package agentos

import (
	"net/http"
	"strings"
	"unicode/utf8"
)

// Text a database cannot store is refused at the edge, before anything is
// read, run or written: a NUL character (Postgres's text and jsonb refuse
// it) or bytes that are not UTF-8. Path and query are checked for every
// route here; form fields in parseForm, JSON bodies in readBody. The stores
// refuse such text too (storage.ErrInvalidText), for callers of the Go API.

// textProblem says what is wrong with s for storing it as text, or "".
func textProblem(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character (\\u0000), which cannot be stored"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	return ""
}

// textIssue is the 422 issue of a value with a text problem.
func textIssue(loc []string, problem string) validationIssue {
	return validationIssue{Loc: loc, Msg: "Input " + problem + "; send text without NUL characters, encoded as UTF-8", Type: "string_invalid_text"}
}

// withCleanText refuses, with 422, a request whose path or query holds text
// a database cannot store.
func (o *OS) withCleanText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var issues []validationIssue
		if p := textProblem(r.URL.Path); p != "" {
			issues = append(issues, textIssue([]string{"path"}, p))
		}
		for name, values := range r.URL.Query() {
			if p := textProblem(name); p != "" {
				issues = append(issues, textIssue([]string{"query"}, "name "+p))
				continue
			}
			for _, v := range values {
				if p := textProblem(v); p != "" {
					issues = append(issues, textIssue([]string{"query", name}, p))
					break
				}
			}
		}
		if len(issues) > 0 {
			writeValidation(w, issues...)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// jsonTextProblem says what is wrong with a JSON document's text for
// storing it, or "": bytes that are not UTF-8 (which a decoder would
// silently replace), or a NUL written as the escape \u0000 (a raw NUL is
// not valid JSON).
func jsonTextProblem(data []byte) string {
	if !utf8.Valid(data) {
		return "is not valid UTF-8"
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		i++ // the escaped character: a backslash escapes exactly one
		if i < len(data) && data[i] == 'u' && i+4 < len(data) && string(data[i+1:i+5]) == "0000" {
			return "contains a NUL character (\\u0000), which cannot be stored"
		}
	}
	return ""
}
