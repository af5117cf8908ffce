package clustertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables a child process reads.
const (
	// EnvChild is set to "1" in every child process.
	EnvChild = "CLUSTERTEST_CHILD"
	// EnvName carries ChildOptions.Name.
	EnvName = "CLUSTERTEST_NAME"
)

// Line prefixes of the child→parent protocol on the child's stdout. Each line
// is "<prefix> ..." with JSON payloads, so other output is ignored.
const (
	lineReady = "clustertest:ready "
	lineRes   = "clustertest:res "
	lineEvent = "clustertest:event "
)

// DefaultReadyTimeout bounds how long StartChild waits for the ready line.
const DefaultReadyTimeout = 30 * time.Second

// stderrTail is how much of a child's stderr is kept for failure reports.
const stderrTail = 64 << 10

// ChildOptions describes a child process.
type ChildOptions struct {
	// Name labels the child in errors and logs.
	Name string
	// TestName is the helper test function the child runs, e.g.
	// "TestHelperMember"; it must call Serve (or RunMember) when IsChild.
	TestName string
	// Env holds extra KEY=VALUE pairs for the child.
	Env []string
	// ReadyTimeout defaults to DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Wrap, if set, runs the child through this command, which must exec
	// its arguments: e.g. "ip", "netns", "exec", ns for a child inside a
	// network namespace (the nemesis partition tests).
	Wrap []string
}

// Child is a running child process of the test binary, driven by Call.
type Child struct {
	// Name is ChildOptions.Name.
	Name string
	// Ready holds the values the child passed to Serve.
	Ready map[string]string

	cmd   *exec.Cmd
	stdin io.WriteCloser

	writeMu sync.Mutex // serializes command lines on stdin

	mu      sync.Mutex // guards the fields below
	nextID  uint64
	pending map[uint64]chan callResult
	events  []string
	stderr  []byte // tail
	races   RaceScanner
	dead    bool // set with the pending calls failed, before exited closes

	readyCh chan map[string]string
	exited  chan struct{} // closed after the process is reaped
	waitErr error         // set before exited is closed
}

type callResult struct {
	ok      bool
	payload string
}

// RemoteError is a handler error reported by a child.
type RemoteError struct {
	Child, Cmd, Msg string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("child %s: %s: %s", e.Child, e.Cmd, e.Msg)
}

// ErrChildExited is returned by Call when the child is gone.
var ErrChildExited = errors.New("clustertest: child exited")

// IsChild reports whether this process is a child started by StartChild.
func IsChild() bool {
	return os.Getenv(EnvChild) == "1"
}

// StartChild re-executes the test binary running only opts.TestName, with
// EnvChild set, and waits for its ready line. The child is stopped (stdin
// closed, then SIGKILL) when the test ends; its stderr is logged if the test
// failed, and a data race reported by the child fails the test.
func StartChild(t testing.TB, opts ChildOptions) *Child {
	t.Helper()
	c, err := startChild(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startChild is StartChild without t.Fatal, for use from other goroutines.
func startChild(t testing.TB, opts ChildOptions) (*Child, error) {
	if opts.TestName == "" {
		return nil, errors.New("clustertest: ChildOptions.TestName is required")
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	args := append(slices.Clone(opts.Wrap), os.Args[0], "-test.run=^"+opts.TestName+"$", "-test.count=1", "-test.timeout=10m")
	cmd := exec.Command(args[0], args[1:]...)
	// A -race binary sleeps atexit_sleep_ms (1 s) before exiting; children
	// report races on stderr as they happen, so skip that wait.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), EnvChild+"=1", EnvName+"="+opts.Name, "GORACE="+gorace)
	cmd.Env = append(cmd.Env, opts.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("clustertest: child %s stdin: %w", opts.Name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("clustertest: child %s stdout: %w", opts.Name, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("clustertest: child %s stderr: %w", opts.Name, err)
	}
	c := &Child{
		Name:    opts.Name,
		cmd:     cmd,
		stdin:   stdin,
		pending: map[uint64]chan callResult{},
		readyCh: make(chan map[string]string, 1),
		exited:  make(chan struct{}),
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("clustertest: start child %s: %w", opts.Name, err)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); c.readStdout(stdout) }()
	go func() { defer readers.Done(); c.readStderr(stderr) }()
	go func() {
		readers.Wait() // exec: all reads must finish before Wait
		err := cmd.Wait()
		c.mu.Lock()
		c.waitErr = err
		c.dead = true
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
		c.mu.Unlock()
		close(c.exited)
	}()
	t.Cleanup(func() { c.cleanup(t) })

	select {
	case ready := <-c.readyCh:
		c.Ready = ready
		return c, nil
	case <-c.exited:
		c.mu.Lock()
		werr := c.waitErr
		c.mu.Unlock()
		return nil, fmt.Errorf("clustertest: child %s exited before ready (%v); stderr:\n%s", c.Name, werr, c.StderrTail())
	case <-time.After(opts.ReadyTimeout):
		c.Kill()
		return nil, fmt.Errorf("clustertest: child %s not ready after %v; stderr:\n%s", c.Name, opts.ReadyTimeout, c.StderrTail())
	}
}

func (c *Child) readStdout(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, lineReady):
			var ready map[string]string
			if err := json.Unmarshal([]byte(line[len(lineReady):]), &ready); err == nil {
				select {
				case c.readyCh <- ready:
				default:
				}
			}
		case strings.HasPrefix(line, lineRes):
			c.onResult(line[len(lineRes):])
		case strings.HasPrefix(line, lineEvent):
			var ev string
			if err := json.Unmarshal([]byte(line[len(lineEvent):]), &ev); err == nil {
				c.mu.Lock()
				c.events = append(c.events, ev)
				c.mu.Unlock()
			}
		}
	}
}

// onResult parses "<id> ok|err <json string>".
func (c *Child) onResult(rest string) {
	idStr, rest, _ := strings.Cut(rest, " ")
	status, payload, _ := strings.Cut(rest, " ")
	id, err := strconv.ParseUint(idStr, 10, 64)
	if err != nil {
		return
	}
	var s string
	if err := json.Unmarshal([]byte(payload), &s); err != nil {
		s = payload
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		ch <- callResult{ok: status == "ok", payload: s}
	}
}

func (c *Child) readStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		c.mu.Lock()
		for _, l := range c.races.Line(sc.Text()) {
			c.stderr = append(c.stderr, l...)
			c.stderr = append(c.stderr, '\n')
		}
		if len(c.stderr) > 2*stderrTail {
			c.stderr = append([]byte(nil), c.stderr[len(c.stderr)-stderrTail:]...)
		}
		c.mu.Unlock()
	}
}

// Call runs cmd with arg in the child and returns the handler's result. A
// handler error comes back as *RemoteError; ErrChildExited if the child dies.
func (c *Child) Call(ctx context.Context, cmd, arg string) (string, error) {
	ch := make(chan callResult, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	if c.dead {
		c.mu.Unlock()
		return "", fmt.Errorf("%w: %s", ErrChildExited, c.Name)
	}
	c.pending[id] = ch
	c.mu.Unlock()

	argJSON, err := json.Marshal(arg)
	if err != nil {
		return "", fmt.Errorf("clustertest: encode arg: %w", err)
	}
	c.writeMu.Lock()
	_, err = fmt.Fprintf(c.stdin, "%d %s %s\n", id, cmd, argJSON)
	c.writeMu.Unlock()
	if err != nil {
		c.forget(id)
		return "", fmt.Errorf("%w: %s: write command: %v", ErrChildExited, c.Name, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return "", fmt.Errorf("%w: %s during %s", ErrChildExited, c.Name, cmd)
		}
		if !r.ok {
			return "", &RemoteError{Child: c.Name, Cmd: cmd, Msg: r.payload}
		}
		return r.payload, nil
	case <-ctx.Done():
		c.forget(id)
		return "", fmt.Errorf("clustertest: child %s: %s: %w", c.Name, cmd, ctx.Err())
	}
}

func (c *Child) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Events returns a copy of the events the child emitted so far (see Emit).
func (c *Child) Events() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.events...)
}

// StderrTail returns the last part of the child's stderr.
func (c *Child) StderrTail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.stderr
	if len(b) > stderrTail {
		b = b[len(b)-stderrTail:]
	}
	return string(b)
}

// Pid returns the child's process ID.
func (c *Child) Pid() int {
	return c.cmd.Process.Pid
}

// Signal sends sig to the child (e.g. syscall.SIGSTOP to freeze it).
func (c *Child) Signal(sig syscall.Signal) error {
	if err := c.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("clustertest: signal %v to child %s: %w", sig, c.Name, err)
	}
	return nil
}

// Kill sends SIGKILL (a crash: no cleanup runs in the child) and waits until
// the process is reaped.
func (c *Child) Kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL) // fails only if already reaped
	<-c.exited
}

// Exited returns a channel closed once the child process is gone.
func (c *Child) Exited() <-chan struct{} {
	return c.exited
}

// Close asks the child to exit by closing its stdin and waits up to timeout,
// then kills it.
func (c *Child) Close(timeout time.Duration) {
	c.writeMu.Lock()
	_ = c.stdin.Close() // an error means the pipe is already closed
	c.writeMu.Unlock()
	select {
	case <-c.exited:
	case <-time.After(timeout):
		c.Kill()
	}
}

func (c *Child) cleanup(t testing.TB) {
	c.Close(5 * time.Second)
	c.mu.Lock()
	races := c.races
	c.mu.Unlock()
	races.Check(t, "child "+c.Name)
	if t.Failed() {
		t.Logf("child %s stderr (tail):\n%s", c.Name, c.StderrTail())
	}
}

// Handler runs one command in a child. arg is the string the parent passed
// to Call; the returned string becomes Call's result, an error its
// RemoteError.
type Handler func(ctx context.Context, arg string) (string, error)

var stdoutMu sync.Mutex

func writeLine(prefix, rest string) {
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	fmt.Fprintf(os.Stdout, "%s%s\n", prefix, rest)
}

// Emit sends an event line to the parent (see Child.Events).
func Emit(event string) {
	b, _ := json.Marshal(event) // a string always encodes
	writeLine(lineEvent, string(b))
}

// Serve runs in the child: it announces ready to the parent, then runs each
// command received on stdin in its own goroutine with handlers. When stdin
// closes (the parent is done or gone) the process exits at once with status
// 0, without running deferred functions or test cleanups.
func Serve(ready map[string]string, handlers map[string]Handler) {
	b, err := json.Marshal(ready)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clustertest: encode ready: %v\n", err)
		os.Exit(2)
	}
	writeLine(lineReady, string(b))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		idStr, rest, _ := strings.Cut(sc.Text(), " ")
		cmd, argJSON, _ := strings.Cut(rest, " ")
		var arg string
		if err := json.Unmarshal([]byte(argJSON), &arg); err != nil {
			reply(idStr, "", fmt.Errorf("bad argument: %v", err))
			continue
		}
		h, ok := handlers[cmd]
		if !ok {
			reply(idStr, "", fmt.Errorf("unknown command %q", cmd))
			continue
		}
		go func() {
			out, err := h(ctx, arg)
			reply(idStr, out, err)
		}()
	}
	os.Exit(0)
}

func reply(id, out string, err error) {
	status := "ok"
	if err != nil {
		status, out = "err", err.Error()
	}
	b, _ := json.Marshal(out) // a string always encodes
	writeLine(lineRes, id+" "+status+" "+string(b))
}
