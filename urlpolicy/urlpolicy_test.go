package urlpolicy_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/urlpolicy"
)

// hosts resolves names from a fixed table, as DNS would.
type hosts map[string][]string

func (h hosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	names, ok := h[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, n := range names {
		out = append(out, netip.MustParseAddr(n))
	}
	return out, nil
}

func TestBlockPrivate(t *testing.T) {
	p := &urlpolicy.Policy{BlockPrivate: true, Resolver: hosts{
		"images.example.com": {"93.184.216.34"},
		"rebind.example.com": {"93.184.216.34", "10.0.0.5"},
		"metadata.internal":  {"169.254.169.254"},
	}}
	refused := []string{
		"http://127.0.0.1/x.png", "http://localhost.localdomain:8080/", "http://10.1.2.3/a", "http://192.168.0.1/",
		"http://172.16.5.4/", "http://169.254.169.254/latest/meta-data/", "http://[::1]/x", "http://[fd00::1]/x",
		"http://[fe80::1]/x", "http://100.64.1.1/", "http://0.0.0.0/", "http://[::ffff:127.0.0.1]/",
		"http://metadata.internal/", "http://rebind.example.com/a.png", "file:///etc/passwd", "gopher://x/",
		"http:///nohost",
	}
	for _, raw := range refused {
		err := p.Check(t.Context(), raw)
		require.ErrorIs(t, err, urlpolicy.ErrRefused, raw)
		require.ErrorIs(t, err, run.ErrInvalidInput, raw)
	}
	for _, raw := range []string{"https://images.example.com/cat.jpg", "http://93.184.216.34/x", "data:image/png;base64,iVBORw0KGgo="} {
		require.NoError(t, p.Check(t.Context(), raw), raw)
	}
	err := p.Check(t.Context(), "https://user:secret@10.0.0.1/x?token=abc")
	require.ErrorIs(t, err, urlpolicy.ErrRefused)
	require.NotContains(t, err.Error(), "secret", "credentials are not echoed")
	require.NotContains(t, err.Error(), "token=abc")
}

func TestAllowAndDeny(t *testing.T) {
	p := &urlpolicy.Policy{BlockPrivate: true, Allow: []string{"*.example.com", "10.9.0.0/16", "cdn.test"}, Deny: []string{"evil.example.com"},
		Resolver: hosts{"a.example.com": {"93.184.216.34"}, "cdn.test": {"93.184.216.35"}}}
	require.NoError(t, p.Validate())
	require.NoError(t, p.Check(t.Context(), "https://a.example.com/x"))
	require.NoError(t, p.Check(t.Context(), "https://example.com/x"), "*.domain covers the domain itself")
	require.NoError(t, p.Check(t.Context(), "http://10.9.1.1/x"), "an allowed private range is allowed")
	require.NoError(t, p.Check(t.Context(), "http://cdn.test/x"))
	require.ErrorIs(t, p.Check(t.Context(), "https://evil.example.com/x"), urlpolicy.ErrRefused, "deny wins")
	require.ErrorIs(t, p.Check(t.Context(), "https://other.org/x"), urlpolicy.ErrRefused, "not allowed")

	open := &urlpolicy.Policy{Deny: []string{"10.0.0.0/8"}}
	require.NoError(t, open.Check(t.Context(), "http://192.168.1.1/x"), "private addresses pass without BlockPrivate")
	require.ErrorIs(t, open.Check(t.Context(), "http://10.2.3.4/x"), urlpolicy.ErrRefused)

	require.Error(t, (&urlpolicy.Policy{Allow: []string{"http://x/"}}).Validate())
	require.Error(t, (&urlpolicy.Policy{Deny: []string{" "}}).Validate())
}

func TestCheckInput(t *testing.T) {
	p := &urlpolicy.Policy{BlockPrivate: true, Resolver: hosts{}}
	in := &run.Input{Images: []run.Image{{URL: "http://127.0.0.1/a.png"}, {Content: []byte("inline")}},
		Files: []run.File{{URL: "http://169.254.169.254/"}}}
	err := p.CheckInput(t.Context(), in)
	require.ErrorIs(t, err, urlpolicy.ErrRefused)
	require.Contains(t, err.Error(), "127.0.0.1")
	require.Contains(t, err.Error(), "169.254.169.254")
	var nilPolicy *urlpolicy.Policy
	require.NoError(t, nilPolicy.CheckInput(t.Context(), in))
}
