// Package urlpolicy decides which URLs a run may hand on to be fetched: the
// media URLs (images, audio, video, files) a client sends, which a model
// provider — or a self-hosted model server, inside the deployment's network —
// downloads. A URL pointing into a private network can make such a server
// reach what the client cannot (server-side request forgery), so a
// [Policy] can refuse loopback, private and link-local addresses, and
// names hosts to allow or deny.
package urlpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/agnogo/agnogo/run"
)

// ErrRefused is wrapped by every refusal of [Policy.Check]. It wraps
// [run.ErrInvalidInput]: a run with a refused URL is refused before it
// starts.
var ErrRefused = fmt.Errorf("%w: media URL refused", run.ErrInvalidInput)

// Policy says which URLs may be fetched. The zero value allows every http,
// https and data URL.
type Policy struct {
	// BlockPrivate refuses a URL whose host is, or resolves to, a loopback,
	// private, link-local, unique-local, carrier-grade NAT, unspecified or
	// multicast address. Default false.
	BlockPrivate bool
	// Allow, when not empty, lists the only hosts allowed; an entry is a
	// host name ("images.example.com"), a domain and its subdomains
	// ("*.example.com"), an IP address or a CIDR ("10.1.0.0/16"). An
	// allowed host is allowed even when BlockPrivate would refuse it.
	Allow []string
	// Deny lists hosts refused, in the same forms; it wins over Allow.
	Deny []string
	// Resolver resolves host names for BlockPrivate. Defaults to
	// net.DefaultResolver.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
}

// Validate checks the policy's entries.
func (p *Policy) Validate() error {
	for _, list := range [][]string{p.Allow, p.Deny} {
		for _, entry := range list {
			if strings.TrimSpace(entry) == "" || strings.ContainsAny(entry, "/:") && !isCIDROrIP(entry) {
				return fmt.Errorf("urlpolicy: %q is not a host name, *.domain, IP address or CIDR", entry)
			}
		}
	}
	return nil
}

func isCIDROrIP(entry string) bool {
	if _, err := netip.ParsePrefix(entry); err == nil {
		return true
	}
	_, err := netip.ParseAddr(entry)
	return err == nil
}

// Check returns nil when raw may be fetched, else an error wrapping
// [ErrRefused] that says why. data: URLs carry their bytes and are always
// allowed; other schemes than http and https are refused.
func (p *Policy) Check(ctx context.Context, raw string) error {
	if p == nil {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %q does not parse", ErrRefused, raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "data":
		return nil
	case "http", "https":
	default:
		return fmt.Errorf("%w: %s: only http and https URLs are fetched", ErrRefused, redact(u))
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return fmt.Errorf("%w: %s has no host", ErrRefused, redact(u))
	}
	literal, parseErr := netip.ParseAddr(host)
	isLiteral := parseErr == nil
	if matchesAny(p.Deny, host, literal, isLiteral) {
		return fmt.Errorf("%w: %s: host %s is denied", ErrRefused, redact(u), host)
	}
	if len(p.Allow) > 0 {
		if matchesAny(p.Allow, host, literal, isLiteral) {
			return nil
		}
		return fmt.Errorf("%w: %s: host %s is not in the allowed hosts", ErrRefused, redact(u), host)
	}
	if !p.BlockPrivate {
		return nil
	}
	addrs := []netip.Addr{literal}
	if !isLiteral {
		resolver := p.Resolver
		if resolver == nil {
			resolver = net.DefaultResolver
		}
		addrs, err = resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return fmt.Errorf("%w: %s: host %s does not resolve: %w", ErrRefused, redact(u), host, err)
		}
	}
	for _, addr := range addrs {
		if private(addr.Unmap()) {
			return fmt.Errorf("%w: %s: host %s is a private, loopback or link-local address (%s)", ErrRefused, redact(u), host, addr)
		}
	}
	return nil
}

// CheckInput checks every media URL of a run's input.
func (p *Policy) CheckInput(ctx context.Context, in *run.Input) error {
	if p == nil || in == nil {
		return nil
	}
	var urls []string
	for _, m := range in.Images {
		urls = append(urls, m.URL)
	}
	for _, m := range in.Audios {
		urls = append(urls, m.URL)
	}
	for _, m := range in.Videos {
		urls = append(urls, m.URL)
	}
	for _, m := range in.Files {
		urls = append(urls, m.URL)
	}
	var errs []error
	for _, raw := range urls {
		if raw == "" {
			continue
		}
		if err := p.Check(ctx, raw); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cgnat is carrier-grade NAT space (RFC 6598), not covered by IsPrivate.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// private reports whether addr is not a public unicast address.
func private(addr netip.Addr) bool {
	return addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() || cgnat.Contains(addr)
}

// matchesAny reports whether host (and its literal address, when it is
// one) matches an entry of list.
func matchesAny(list []string, host string, literal netip.Addr, isLiteral bool) bool {
	for _, entry := range list {
		entry = strings.ToLower(strings.TrimSpace(entry))
		switch {
		case strings.HasPrefix(entry, "*."):
			if domain := entry[2:]; host == domain || strings.HasSuffix(host, "."+domain) {
				return true
			}
		case isLiteral && strings.Contains(entry, "/"):
			if prefix, err := netip.ParsePrefix(entry); err == nil && prefix.Contains(literal.Unmap()) {
				return true
			}
		case isLiteral:
			if addr, err := netip.ParseAddr(entry); err == nil && addr.Unmap() == literal.Unmap() {
				return true
			}
		case entry == host:
			return true
		}
	}
	return false
}

// redact is a URL for an error message: scheme, host and path, without
// credentials or query.
func redact(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// ErrDialRefused is wrapped by the error of a connection [Policy.DialContext]
// refused to make.
var ErrDialRefused = errors.New("connection refused by the URL policy")

// DialContext returns a dial function for an [net/http.Transport] that
// connects only where the policy allows: a denied host, a host outside a
// non-empty Allow list, or — with BlockPrivate — a host resolving to a
// loopback, private or link-local address is refused with an error wrapping
// [ErrDialRefused]. It checks the very addresses it connects to, so a name
// that resolves to a public address when a URL is checked and to a private
// one when it is fetched (DNS rebinding), or a redirect into the private
// network, is refused too. dialer defaults to a zero net.Dialer.
func (p *Policy) DialContext(dialer *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if p == nil {
			return dialer.DialContext(ctx, network, address)
		}
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrDialRefused, address, err)
		}
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		literal, parseErr := netip.ParseAddr(host)
		isLiteral := parseErr == nil
		if matchesAny(p.Deny, host, literal, isLiteral) {
			return nil, fmt.Errorf("%w: host %s is denied", ErrDialRefused, host)
		}
		if len(p.Allow) > 0 {
			if !matchesAny(p.Allow, host, literal, isLiteral) {
				return nil, fmt.Errorf("%w: host %s is not in the allowed hosts", ErrDialRefused, host)
			}
			return dialer.DialContext(ctx, network, address)
		}
		if !p.BlockPrivate {
			return dialer.DialContext(ctx, network, address)
		}
		addrs := []netip.Addr{literal}
		if !isLiteral {
			resolver := p.Resolver
			if resolver == nil {
				resolver = net.DefaultResolver
			}
			addrs, err = resolver.LookupNetIP(ctx, "ip", host)
			if err != nil {
				return nil, fmt.Errorf("look up %s: %w", host, err)
			}
		}
		for _, addr := range addrs {
			if private(addr.Unmap()) || matchesAny(p.Deny, host, addr, true) {
				return nil, fmt.Errorf("%w: host %s is a private, loopback or link-local address (%s)", ErrDialRefused, host, addr)
			}
		}
		var errs []error
		for _, addr := range addrs {
			conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(addr.Unmap().String(), port))
			if err == nil {
				return conn, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}
