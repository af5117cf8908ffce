package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/cluster/clustertest"
)

// exposedIP returns an address of this machine other than loopback, or
// skips: the "safe by default" rule is about such addresses. In CI (.ci/run
// exports CI) a machine without one fails instead: the test would check
// nothing there.
func exposedIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this machine has no non-loopback IPv4 address, so the safe-by-default rule goes unchecked in CI")
	}
	t.Skip("this machine has no non-loopback IPv4 address")
	return ""
}

// awaitLog polls p's stderr until it holds want. stdout's ready line and
// stderr are read by separate goroutines, so a line logged before ready
// may not have been read yet when startProc returns.
func awaitLog(t *testing.T, p *proc, want string) {
	t.Helper()
	clustertest.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(p.logTail(), want) {
			return fmt.Errorf("%s has not logged %q yet", p.name, want)
		}
		return nil
	})
}

// TestSecureByDefault: a node whose gossip is reachable from other machines
// refuses to start without a gossip key and remote TLS; --insecure-cluster
// starts it with an ERROR line; a key (from the environment) and TLS files
// start it quietly. Loopback nodes need nothing (every other matchd test).
func TestSecureByDefault(t *testing.T) {
	ip := exposedIP(t)
	gossip := net.JoinHostPort(ip, "0")

	t.Run("refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, matchdBin(t), "--gossip-addr", gossip, "--remote-addr", "127.0.0.1:0",
			"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--admin-token", testAdminToken, "--ticket-key", testTicketKey)
		out, err := cmd.CombinedOutput()
		if err == nil || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("matchd with an exposed gossip address and no secrets: err %v, want exit status 1\n%s", err, out)
		}
		if !strings.Contains(string(out), "unprotected member on a non-loopback address") || !strings.Contains(string(out), "--insecure-cluster") {
			t.Fatalf("refusal does not say why and what to do:\n%s", out)
		}
	})

	t.Run("insecure on purpose", func(t *testing.T) {
		p := startProc(t, "insecure", "--gossip-addr", gossip, "--insecure-cluster", "--data-dir", t.TempDir())
		awaitLog(t, p, "INSECURE member")
	})

	t.Run("protected", func(t *testing.T) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			t.Fatal(err)
		}
		t.Setenv("MATCHD_GOSSIP_KEY", base64.StdEncoding.EncodeToString(key))
		dir := t.TempDir()
		files := clustertest.NewCA(t, "matchd test CA").Issue(t, dir, "node", "127.0.0.1")
		// Info logs: stderr's own "matchd ready" line comes after any
		// INSECURE line would, so once it is read the absence means something.
		p := startProc(t, "protected", "--gossip-addr", gossip, "--data-dir", t.TempDir(), "--log-level", "info",
			"--cluster-tls-cert", files.CertFile, "--cluster-tls-key", files.KeyFile, "--cluster-tls-ca", files.CAFile)
		awaitLog(t, p, "matchd ready")
		if strings.Contains(p.logTail(), "INSECURE") {
			t.Fatalf("a protected node logged INSECURE:\n%s", p.logTail())
		}
	})
}
