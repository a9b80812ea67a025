package claude_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/internal/testcli"
)

type probe struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	err   bytes.Buffer
}

func startProbe(t *testing.T, env []string, args ...string) *probe {
	bin := testcli.ClaudeBin(t)
	p := &probe{t: t, lines: make(chan string, 1000)}
	p.cmd = exec.Command(bin, append([]string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, args...)...)
	p.cmd.Env = env
	p.cmd.Dir = t.TempDir()
	p.cmd.Stderr = &p.err
	out, _ := p.cmd.StdoutPipe()
	p.in, _ = p.cmd.StdinPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(out)
		s.Buffer(nil, 1<<24)
		for s.Scan() {
			p.lines <- s.Text()
		}
		close(p.lines)
	}()
	return p
}

func (p *probe) send(v string) { fmt.Fprintln(p.in, v); fmt.Printf(">>> %s\n", v) }

func (p *probe) read(until func(string) bool, d time.Duration) []string {
	var got []string
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				err := p.cmd.Wait()
				fmt.Printf("EXIT %v stderr=%q\n", err, p.err.String())
				return got
			}
			if len(l) > 600 && strings.Contains(l, `"subtype":"init"`) {
				fmt.Printf("<<< %s…\n", l[:300])
			} else {
				fmt.Printf("<<< %s\n", l)
			}
			got = append(got, l)
			if until != nil && until(l) {
				return got
			}
		case <-timeout:
			fmt.Println("TIMEOUT")
			return got
		}
	}
}

func isResult(l string) bool { return strings.Contains(l, `"type":"result"`) }

func userMsg(text string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}, "parent_tool_use_id": nil, "session_id": "default"})
	return string(b)
}

const initReq = `{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`

func TestProbeResumeMissing(t *testing.T) {
	api := fakeanthropic.New(t)
	api.Directed()
	p := startProbe(t, testcli.ClaudeEnv(api.URL, t.TempDir()), "--replay-user-messages", "--permission-mode=bypassPermissions", "--resume=0b0b0b0b-0000-4000-8000-000000000000")
	p.send(initReq)
	p.read(nil, 3*time.Second)
	p.send(userMsg("hi"))
	p.read(nil, 5*time.Second)
}

func TestProbePermission(t *testing.T) {
	api := fakeanthropic.New(t)
	api.Directed()
	p := startProbe(t, testcli.ClaudeEnv(api.URL, t.TempDir()), "--replay-user-messages", "--permission-prompt-tool=stdio")
	p.send(initReq)
	p.read(func(l string) bool { return strings.Contains(l, "control_response") }, 10*time.Second)
	p.send(userMsg("run [[bash:touch made-by-bash]]"))
	got := p.read(func(l string) bool { return strings.Contains(l, "can_use_tool") || isResult(l) }, 20*time.Second)
	var req struct {
		RequestID string `json:"request_id"`
	}
	json.Unmarshal([]byte(got[len(got)-1]), &req)
	p.send(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"behavior":"deny","message":"needs approval","interrupt":true}}}`, req.RequestID))
	p.read(isResult, 20*time.Second)
	p.in.Close()
	p.read(nil, 10*time.Second)
}

func TestProbeInterrupt(t *testing.T) {
	api := fakeanthropic.New(t)
	api.Directed()
	p := startProbe(t, testcli.ClaudeEnv(api.URL, t.TempDir()), "--replay-user-messages", "--permission-mode=bypassPermissions")
	p.send(initReq)
	p.read(func(l string) bool { return strings.Contains(l, "control_response") }, 10*time.Second)
	p.send(userMsg("slow [[sleep:5]] [[text:one two three]]"))
	p.read(nil, 1500*time.Millisecond)
	p.send(`{"type":"control_request","request_id":"req_2","request":{"subtype":"interrupt"}}`)
	p.read(isResult, 10*time.Second)
	p.in.Close()
	p.read(nil, 10*time.Second)
}

func TestProbeErrors(t *testing.T) {
	for _, code := range []string{"401", "400", "429"} {
		api := fakeanthropic.New(t)
		api.Directed()
		env := append(testcli.ClaudeEnv(api.URL, t.TempDir()), "CLAUDE_CODE_MAX_RETRIES=0")
		p := startProbe(t, env, "--permission-mode=bypassPermissions")
		p.send(initReq)
		p.send(userMsg("fail [[error:" + code + "]]"))
		p.read(isResult, 30*time.Second)
		p.in.Close()
		p.read(nil, 5*time.Second)
	}
}

func TestProbeRefused(t *testing.T) {
	env := append(testcli.ClaudeEnv("http://127.0.0.1:1", t.TempDir()), "CLAUDE_CODE_MAX_RETRIES=0")
	p := startProbe(t, env, "--permission-mode=bypassPermissions")
	p.send(initReq)
	p.send(userMsg("hello"))
	p.read(isResult, 60*time.Second)
	p.in.Close()
	p.read(nil, 5*time.Second)
}

var _ = os.Getenv
