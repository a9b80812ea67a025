package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agnogo/agnogo/internal/loadtest"
)

// BenchmarkSlowClients measures what 1,000 slow clients cost the built
// `agnogo serve` with the default config: each sends a run request's headers
// with Content-Length: 100000, then one byte of body every 3 seconds. It
// reports the server's resident memory idle (idle-rss-MiB) and at its peak
// while the clients are connected (peak-rss-MiB, VmHWM), and when the last
// client was cut off (last-cut-s, from its headers); it fails unless every
// client is answered 400 and disconnected at server.body_timeout_seconds
// (60 s), not before and within 30 s after. One op is one wave of 1,000
// clients: run it with -benchtime 1x.
func BenchmarkSlowClients(b *testing.B) {
	const (
		clients     = 1000
		interval    = 3 * time.Second
		bodyTimeout = 60 * time.Second // the default of server.body_timeout_seconds
	)
	dir := b.TempDir()
	config := filepath.Join(dir, "agnogo.yaml")
	yaml := fmt.Sprintf("db: sqlite://%s\nagents:\n  - {id: assistant, model: openai:gpt-5-mini}\n", filepath.Join(dir, "agnogo.db"))
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		b.Fatal(err)
	}
	p := startProcess(b, buildBinary(b), config)
	addr := strings.TrimPrefix(p.url, "http://")
	health, err := http.Get(p.url + "/health")
	if err != nil {
		b.Fatal(err)
	}
	health.Body.Close()
	idle, err := loadtest.ReadMemory(p.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}

	var lastCut time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(b.Context())
		cuts := make(chan time.Duration, clients)
		failures := make(chan error, clients)
		var wg sync.WaitGroup
		for range clients {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				defer conn.Close()
				cut, err := slowClient(ctx, conn, interval)
				if err != nil {
					failures <- err
					return
				}
				cuts <- cut
			})
		}
		wg.Wait()
		cancel()
		close(cuts)
		close(failures)
		for err := range failures {
			b.Fatal(err)
		}
		for cut := range cuts {
			if cut < bodyTimeout || cut > bodyTimeout+30*time.Second {
				b.Fatalf("a slow client was cut off after %s, want %s to %s", cut, bodyTimeout, bodyTimeout+30*time.Second)
			}
			lastCut = max(lastCut, cut)
		}
	}
	loaded, err := loadtest.ReadMemory(p.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(loadtest.MiB(idle.RSS), "idle-rss-MiB")
	b.ReportMetric(loadtest.MiB(loaded.Peak), "peak-rss-MiB")
	b.ReportMetric(lastCut.Seconds(), "last-cut-s")
}

// slowClient sends a run request's headers on conn, then a byte of body
// every interval, until the server answers; it checks the answer is a 400
// that closes the connection and returns how long after the headers it came.
func slowClient(ctx context.Context, conn net.Conn, interval time.Duration) (time.Duration, error) {
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Minute)); err != nil {
		return 0, err
	}
	sent := time.Now()
	if _, err := fmt.Fprint(conn, "POST /agents/assistant/runs HTTP/1.1\r\nHost: agnogo\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\nmessage="); err != nil {
		return 0, fmt.Errorf("send the headers: %w", err)
	}
	answered := make(chan struct{})
	defer close(answered)
	go func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-answered:
				return
			case <-ticker.C:
				if _, err := conn.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, nil)
	if err != nil {
		return 0, fmt.Errorf("read the answer: %w", err)
	}
	cut := time.Since(sent)
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusBadRequest || !resp.Close {
		return 0, fmt.Errorf("answer %s (close %t), want 400 closing the connection", resp.Status, resp.Close)
	}
	if _, err := reader.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		return 0, fmt.Errorf("after the answer: %v, want the connection closed", err)
	}
	return cut, nil
}
