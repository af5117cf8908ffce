package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// matchdBinary is built once per test binary, without -race: the nodes are
// separate processes, and several protoactor members are only race-clean
// apart (docs/cluster.md §6).
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func matchdBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "matchd-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "matchd")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build matchd: %v", buildErr)
	}
	return binPath
}

// proc is one matchd process on loopback ports.
type proc struct {
	name   string
	cmd    *exec.Cmd
	member string
	http   string
	tcp    string
	gossip string
	done   chan struct{}

	mu     sync.Mutex
	stderr []string
}

const (
	testAdminToken = "test-admin-token"
	testTicketKey  = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
)

// startProc starts matchd with args (plus fresh loopback ports, the shared
// admin token and ticket key) and waits for its ready line.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startProcSecrets(t, name, true, args...)
}

// startProcSecrets is startProc; without secrets the node gets no
// --admin-token and no --ticket-key and must find them itself.
func startProcSecrets(t *testing.T, name string, secrets bool, args ...string) *proc {
	t.Helper()
	base := []string{
		"--node-name", name, "--gossip-addr", "127.0.0.1:0", "--remote-addr", "127.0.0.1:0",
		"--listen", "127.0.0.1:0", "--tcp-listen", "127.0.0.1:0", "--log-level", "warn",
	}
	if secrets {
		base = append(base, "--admin-token", testAdminToken, "--ticket-key", testTicketKey)
	}
	cmd := exec.Command(matchdBin(t), append(base, args...)...)
	cmd.Env = os.Environ()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "matchd ready ") {
				ready <- l
			}
		}
	}()
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr = append(p.stderr, sc.Text())
			if len(p.stderr) > 200 {
				p.stderr = p.stderr[100:]
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		_ = cmd.Wait() // the exit status of a killed node is expected to be non-zero
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case l := <-ready:
		for _, kv := range strings.Fields(strings.TrimPrefix(l, "matchd ready ")) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "member":
				p.member = v
			case "http":
				p.http = v
			case "tcp":
				p.tcp = v
			case "gossip":
				p.gossip = v
			}
		}
	case <-p.done:
		t.Fatalf("%s exited before ready:\n%s", name, p.logTail())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s not ready after 30 s:\n%s", name, p.logTail())
	}
	return p
}

// kill sends SIGKILL: no leave, no flush, like a crashed machine.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return
	}
	<-p.done
}

func (p *proc) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

func (p *proc) logTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.stderr, "\n")
}

// eventually polls f until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("condition not met within %v: %v", timeout, err)
}
