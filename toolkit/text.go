package toolkit

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agnogo/agnogo/run"
)

// Cut bounds s to at most max characters (runes, so the cut never splits
// one) followed by sep and a note saying how many were shown, for results a
// model reads.
func Cut(s string, max int, sep string) string {
	total := utf8.RuneCountInString(s)
	if total <= max {
		return s
	}
	i, n := 0, 0
	for i < len(s) && n < max {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return s[:i] + sep + fmt.Sprintf("[cut: %d of %d characters shown]", max, total)
}

// ResolveURL returns the URL a model named: an absolute http or https URL,
// or, with base set, a path under base ("users/1" and "/users/1" are both
// {base}/users/1). Anything else is a bad_request [*Error] of toolkit that
// says what to send.
func ResolveURL(toolkit string, base *url.URL, raw string) (*url.URL, error) {
	bad := func(format string, args ...any) error {
		return &Error{Toolkit: toolkit, Class: run.ClassBadRequest, Message: fmt.Sprintf(format, args...)}
	}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, bad("url is empty")
	}
	u, err := url.Parse(raw)
	if err == nil && u.IsAbs() {
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, bad("url %q: only http and https URLs can be fetched", raw)
		}
		if u.Host == "" {
			return nil, bad("url %q has no host", raw)
		}
		return u, nil
	}
	if base == nil {
		return nil, bad("url %q: want an absolute http or https URL, such as https://example.com/page", raw)
	}
	joined, err := url.Parse(base.String() + "/" + strings.TrimLeft(raw, "/"))
	if err != nil {
		return nil, bad("url %q: %v", raw, err)
	}
	return joined, nil
}
