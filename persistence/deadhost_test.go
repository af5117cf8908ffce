//go:build linux

package persistence_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestDeadDatabaseHostFailsFast is a database host that vanishes from the
// network, as a machine that died or was cut off does: no RST, every packet
// dropped. The database's address lives in a network namespace the test
// makes (its listener forwards to the throwaway PostgreSQL), and nft in
// that namespace drops everything. A statement sent on a pooled connection
// must then fail within the store's TCP user timeout, not hang until the
// caller's deadline (which stands for --store-timeout here). With
// TCPTimeouts{UserTimeout: -1, KeepAliveIdle: -1} it hangs until the
// deadline and the test fails.
func TestDeadDatabaseHostFailsFast(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace (CI runs as root)")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	const (
		userTimeout = time.Second
		callTimeout = 20 * time.Second // the store timeout: a call on a dead host must not wait for it
		bound       = 6 * time.Second  // the user timeout, with room for a busy machine
	)
	pg, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatalf("parse the test database's URL: %v", err)
	}
	host := newDeadHost(t, pg.Host)
	pg.Host = host.addr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := persistence.OpenPostgres(ctx, pg.String(),
		persistence.WithSchema(pgtest.NewSchema(t)),
		persistence.WithLogger(slog.New(slog.DiscardHandler)),
		persistence.WithoutGroupCommit(),
		persistence.WithMaxConns(1),
		persistence.WithTCPTimeouts(persistence.TCPTimeouts{UserTimeout: userTimeout, KeepAliveIdle: time.Second, KeepAliveInterval: 500 * time.Millisecond, KeepAliveCount: 2}))
	if err != nil {
		t.Fatalf("open the store through %s: %v", host.addr, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.CreateMatch(ctx, "dead-host", []byte("{}")); err != nil {
		t.Fatalf("create a match while the host is reachable: %v", err)
	}

	host.vanish(t)
	call, stop := context.WithTimeout(context.Background(), callTimeout)
	defer stop()
	start := time.Now()
	_, err = s.ListUnfinished(call, "", 10)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("a store call answered through a host whose packets are all dropped")
	}
	if took > bound {
		t.Fatalf("a store call on a dead host took %v (bound %v, TCP user timeout %v): %v", took.Round(time.Millisecond), bound, userTimeout, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the call waited for its own deadline, not the TCP user timeout: %v", err)
	}
	t.Logf("a store call on a dead host failed after %v: %v", took.Round(time.Millisecond), err)
}

// deadHost is an address in a network namespace of its own, reached over a
// veth pair, whose listener forwards to a real server; vanish drops every
// packet in the namespace.
type deadHost struct {
	ns, addr string
}

func newDeadHost(t *testing.T, target string) *deadHost {
	t.Helper()
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	id := hex.EncodeToString(b[:])
	h := &deadHost{ns: "mgka-" + id}
	// A /30 of its own in 10.78.0.0/16; the veth pair never leaves this machine.
	third := int(b[0])
	local, remote := fmt.Sprintf("10.78.%d.1", third), fmt.Sprintf("10.78.%d.2", third)
	hostIf := "mgka" + id
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", h.ns).CombinedOutput(); err != nil {
			t.Logf("delete namespace %s: %v: %s", h.ns, err, out)
		}
	})
	for _, c := range [][]string{
		{"ip", "netns", "add", h.ns},
		{"ip", "link", "add", hostIf, "type", "veth", "peer", "name", "eth0", "netns", h.ns},
		{"ip", "addr", "add", local + "/30", "dev", hostIf},
		{"ip", "link", "set", hostIf, "up"},
		{"ip", "-n", h.ns, "link", "set", "lo", "up"},
		{"ip", "-n", h.ns, "addr", "add", remote + "/30", "dev", "eth0"},
		{"ip", "-n", h.ns, "link", "set", "eth0", "up"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	ln := listenIn(t, h.ns, remote+":0")
	h.addr = ln.Addr().String()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	return h
}

// listenIn listens on addr inside namespace ns: the socket belongs to the
// namespace it was made in, whichever thread uses it later. The thread that
// entered ns exits with its goroutine (locked, never unlocked), so no other
// goroutine ever runs in ns.
func listenIn(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("enter namespace %s: %w", ns, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		ch <- result{ln, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, ns, r.err)
	}
	return r.ln
}

// vanish drops every packet into and out of the namespace: the host is
// gone without a word.
func (h *deadHost) vanish(t *testing.T) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", h.ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader("table inet mgka {\n\tchain in { type filter hook input priority 0; policy drop; }\n\tchain out { type filter hook output priority 0; policy drop; }\n}\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("drop packets in %s: %v: %s", h.ns, err, out)
	}
}
