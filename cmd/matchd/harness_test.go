package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/cluster/clustertest"
)

// binaries holds the matchd builds of this test binary: plain, and with
// -race for the chaos test that checks the nodes themselves for data races.
// Each node is its own process, so a -race node sees only its own races,
// which the harness reads from its stderr (clustertest.RaceScanner). Most
// chaos tests use the plain build: -race multiplies a node's CPU cost on a
// shared 2-core machine, and their subject is timing.
var binaries [2]struct {
	once sync.Once
	path string
	err  error
}

// matchdBin is the plain build of matchd.
func matchdBin(t *testing.T) string {
	t.Helper()
	return matchdBuild(t, false)
}

// matchdBuild is the matchd build of this test binary, with -race if race.
func matchdBuild(t *testing.T, race bool) string {
	t.Helper()
	i := 0
	if race {
		i = 1
	}
	b := &binaries[i]
	b.once.Do(func() {
		if bin := os.Getenv("MATCHGRAIN_TEST_MATCHD"); bin != "" && !race {
			// A build made beforehand, e.g. to run one test many times
			// against one build while the tree changes.
			b.path = bin
			return
		}
		dir, err := os.MkdirTemp("", "matchd-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "matchd")
		args := []string{"build", "-o", b.path}
		if race {
			args = append(args, "-race")
		}
		start := time.Now()
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		t.Logf("built matchd (race=%v) in %v", race, time.Since(start).Round(time.Millisecond))
	})
	if b.err != nil {
		t.Fatalf("build matchd: %v", b.err)
	}
	return b.path
}

// proc is one matchd process on loopback ports.
type proc struct {
	name   string
	cmd    *exec.Cmd
	member string
	http   string
	tcp    string
	gossip string
	done   chan struct{} // closed once the process is reaped and its stderr read

	mu           sync.Mutex
	stderr       []string
	races        clustertest.RaceScanner
	fencedWrites int64 // from the "matchd grains stopped" line, -1 until seen
	topology     int   // members in the last "cluster topology changed" line
}

const (
	testAdminToken = "test-admin-token"
	testTicketKey  = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
)

// startProc starts matchd with args (plus fresh loopback ports, the shared
// admin token and ticket key) and waits for its ready line.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startProcOpts(t, name, procOpts{secrets: true}, args...)
}

// startProcSecrets is startProc; without secrets the node gets no
// --admin-token and no --ticket-key and must find them itself.
func startProcSecrets(t *testing.T, name string, secrets bool, args ...string) *proc {
	t.Helper()
	return startProcOpts(t, name, procOpts{secrets: secrets}, args...)
}

// startProcBuild is startProc with the -race build of matchd if race. Every
// data race such a node reports fails the test, unless it lies entirely in a
// dependency listed in clustertest.AllowedRaces.
func startProcBuild(t *testing.T, name string, race bool, args ...string) *proc {
	t.Helper()
	return startProcOpts(t, name, procOpts{secrets: true, race: race}, args...)
}

// chaosRace reports whether every node of t runs the -race build because
// MATCHGRAIN_CHAOS_RACE is set (make chaos-smoke) and t is a multi-process
// test (TestChaos…, TestCluster…): races in recovery paths then fail them.
func chaosRace(t *testing.T) bool {
	name := t.Name()
	return os.Getenv("MATCHGRAIN_CHAOS_RACE") != "" && (strings.HasPrefix(name, "TestChaos") || strings.HasPrefix(name, "TestCluster"))
}

// procOpts choose how startProcOpts starts a node.
type procOpts struct {
	secrets bool   // pass the shared --admin-token and --ticket-key
	race    bool   // run the -race build
	bin     string // run this matchd binary instead (another build)
}

func startProcOpts(t *testing.T, name string, o procOpts, args ...string) *proc {
	t.Helper()
	level := "warn"
	if l := os.Getenv("MATCHGRAIN_TEST_LOG_LEVEL"); l != "" {
		level = l // diagnosis: more of each node's log in the failure tail and the log files
	}
	base := []string{
		"--node-name", name, "--gossip-addr", "127.0.0.1:0", "--remote-addr", "127.0.0.1:0",
		"--listen", "127.0.0.1:0", "--tcp-listen", "127.0.0.1:0", "--log-level", level,
	}
	if o.secrets {
		base = append(base, "--admin-token", testAdminToken, "--ticket-key", testTicketKey)
	}
	exe := o.bin
	if exe == "" {
		exe = matchdBuild(t, o.race || chaosRace(t))
	}
	cmd := exec.Command(exe, append(base, args...)...)
	// A -race binary sleeps 1 s before exiting by default; races are
	// reported as they happen, so skip that wait.
	// exitcode=0: a node that would exit 0 but reported a race exits 66,
	// even for the dependency races clustertest.AllowedRaces lets pass;
	// races fail the test through its stderr instead (races.Check below),
	// so tests that expect a clean exit hold for -race nodes too.
	cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0 exitcode=0"))
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
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), fencedWrites: -1}
	// MATCHGRAIN_TEST_LOG_DIR keeps every node's whole stderr, one file per
	// node and test, for diagnosing a failure the bounded tail cut off.
	var logFile *os.File
	if dir := os.Getenv("MATCHGRAIN_TEST_LOG_DIR"); dir != "" {
		f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+".log"))
		if err != nil {
			t.Fatalf("node log file: %v", err)
		}
		logFile = f
	}
	ready := make(chan string, 1)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "matchd ready ") {
				select {
				case ready <- l:
				default:
				}
			}
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		if logFile != nil {
			defer func() { _ = logFile.Close() }() // a diagnostic copy only
		}
		for sc.Scan() {
			if logFile != nil {
				_, _ = fmt.Fprintln(logFile, sc.Text()) // a diagnostic copy only
			}
			p.mu.Lock()
			for _, l := range p.races.Line(sc.Text()) {
				p.onLine(l)
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		readers.Wait() // exec: reads finish before Wait
		_ = cmd.Wait() // the exit status is read from cmd.ProcessState by exitCode
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		p.mu.Lock()
		races := p.races
		p.mu.Unlock()
		races.Check(t, "matchd "+name)
		if t.Failed() {
			t.Logf("matchd %s stderr (tail):\n%s", name, p.logTail())
		}
	})
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

// onLine keeps one stderr line (p.mu held): the tail for failure reports,
// and the counters the node logs when it stops.
func (p *proc) onLine(l string) {
	p.stderr = append(p.stderr, l)
	if len(p.stderr) > 400 {
		p.stderr = p.stderr[200:]
	}
	if strings.Contains(l, "cluster topology changed") {
		for _, kv := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(kv, "members="); ok {
				if n, err := strconv.Atoi(v); err == nil {
					p.topology = n
				}
			}
		}
	}
	if strings.Contains(l, "fenced_writes=") {
		for _, kv := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(kv, "fenced_writes="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					p.fencedWrites = n
				}
			}
		}
	}
}

// exitCode waits up to timeout for the process to end and returns its exit
// status (-1 if a signal ended it), failing the test if it is still running.
func (p *proc) exitCode(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v:\n%s", p.name, timeout, p.logTail())
	}
	return p.cmd.ProcessState.ExitCode()
}

// topologyMembers is the member count of the node's last topology change
// (0 before the first; needs info logs).
func (p *proc) topologyMembers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.topology
}

// seeMembers returns a condition for clustertest.Eventually: every one of
// procs counts n members in its last topology change (needs info logs).
func seeMembers(n int, procs ...*proc) func() error {
	return func() error {
		for _, p := range procs {
			if got := p.topologyMembers(); got != n {
				return fmt.Errorf("%s sees %d members, want %d", p.name, got, n)
			}
		}
		return nil
	}
}

// stoppedFencedWrites is the fenced_writes count of the node's "matchd
// grains stopped" log line (-1 if it did not log one: killed, or a log
// level above info).
func (p *proc) stoppedFencedWrites() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fencedWrites
}

func (p *proc) logTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.stderr, "\n")
}
