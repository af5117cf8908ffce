package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/ops"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
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

// TestAdminRoutesOneAuthorization is attack 5 of issue 41 (and issue 37's
// "one operations API"): during a token rotation the previous token opens
// every admin route — the edge's, and every route of the operations API the
// console and matchctl read — with the same header parsing; a missing or
// wrong token opens none, with the one JSON error shape.
func TestAdminRoutesOneAuthorization(t *testing.T) {
	const previous = "the-previous-admin-token"
	p := startProc(t, "rotating", "--data-dir", t.TempDir(), "--admin-tokens-previous", previous)
	type req struct{ method, path, body string }
	routes := []req{
		{"POST", "/api/matches", `{"players":[{"name":"a","deck":"S1"},{"name":"b","deck":"S2"}]}`},
		{"POST", "/api/game/tickets", `{"matchId":"nope","seat":0}`},
		{"POST", "/api/game/spectator-tickets", `{"matchId":"nope"}`},
		{"GET", "/api/decks", ""},
	}
	for _, r := range ops.Routes {
		routes = append(routes, req{"GET", strings.ReplaceAll(r, "{id}", "nope"), ""})
	}
	do := func(r req, auth string) (int, string) {
		t.Helper()
		hr, err := http.NewRequest(r.method, "http://"+p.http+r.path, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Content-Type", "application/json")
		if auth != "" {
			hr.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// matchctl reads the console's endpoint with the token from a file.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(previous+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := matchctl(t, "matches", "--server", "http://"+p.http, "--token-file", tokenFile); code != 0 || !strings.Contains(string(out), `"matches"`) {
		t.Errorf("matchctl matches --token-file: exit %d: %s", code, out)
	}
	for _, r := range routes {
		for _, auth := range []string{"Bearer " + previous, "Bearer " + testAdminToken, "bearer " + previous, "Bearer  " + previous} {
			if code, body := do(r, auth); code == http.StatusUnauthorized || code == http.StatusNotFound && strings.Contains(body, `"error":"not_found"`) {
				t.Errorf("%s %s with %q: %d %s", r.method, r.path, strings.Replace(auth, previous, "<previous>", 1), code, body)
			}
		}
		for _, auth := range []string{"", "Bearer wrong", "Basic " + previous, previous} {
			code, body := do(r, auth)
			var e struct{ Error, Message string }
			if err := json.Unmarshal([]byte(body), &e); code != http.StatusUnauthorized || err != nil || e.Error != "unauthorized" || e.Message == "" {
				t.Errorf("%s %s with %q: %d %s, want 401 {error: unauthorized}", r.method, r.path, auth, code, body)
			}
		}
	}
}

// TestNoSecretOnStdout is attack 4 of issue 41: --demo prints where the
// admin token is, never the token (with a database it is the cluster's); a
// generated token lives in a file only its owner reads, which matchctl
// takes (TestAdminRoutesOneAuthorization).
func TestNoSecretOnStdout(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, matchdBin(t), "--demo", "--gossip-addr", "127.0.0.1:0", "--remote-addr", "127.0.0.1:0",
		"--listen", "127.0.0.1:0", "--data-dir", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }() // the demo node serves until killed
	// Stdout up to the demo's banner, which names the console and the token.
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for !strings.Contains(out.String(), "ops console:") && sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	b, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatalf("the generated admin token is not in the data directory: %v\n%s", err, out.String())
	}
	token := strings.TrimSpace(string(b))
	if fi, err := os.Stat(filepath.Join(dir, "admin-token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v, want mode 0600", err)
	}
	if !strings.Contains(out.String(), "ops console:") || !strings.Contains(out.String(), filepath.Join(dir, "admin-token")) {
		t.Fatalf("the banner does not say where the token is:\n%s", out.String())
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if len(token) < 16 || strings.Contains(out.String(), token) || strings.Contains(stderr.String(), token) {
		t.Fatalf("the admin token %q is in the output:\n%s\n%s", token, out.String(), stderr.String())
	}
}

// TestForeignMemberServesNothing is attack 3 of issue 41: a member of
// another cluster (another gossip key) on this cluster's database refuses
// to start, since the database records the cluster's identity; the same
// member without the database is refused at join and then serves no player
// and says so on /healthz, while the cluster's own members stay healthy. A
// member with the cluster's key starts on the database (the control).
func TestForeignMemberServesNothing(t *testing.T) {
	schema := pgtest.NewSchema(t)
	db := []string{"--database-url", pgtest.URL(t), "--database-schema", schema, "--cluster-name", "identity"}
	key := func() string {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(k)
	}
	ours, theirs := key(), key()
	t.Setenv("MATCHD_GOSSIP_KEY", ours)
	a := startProc(t, "a", db...)

	t.Setenv("MATCHD_GOSSIP_KEY", theirs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, matchdBin(t), append([]string{"--node-name", "foreign", "--gossip-addr", "127.0.0.1:0",
		"--remote-addr", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--admin-token", testAdminToken, "--join", a.gossip}, db...)...)
	out, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "another cluster") {
		t.Fatalf("a member of another cluster on this database: %v, want exit status 1 naming the other cluster\n%s", err, out)
	}

	refused := startProc(t, "refused", "--data-dir", t.TempDir(), "--cluster-name", "identity", "--join", a.gossip)
	health := func(p *proc) (int, string) {
		resp, err := http.Get("http://" + p.http + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	clustertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if code, body := health(refused); code != http.StatusServiceUnavailable || !strings.Contains(body, "not_admitted") {
			return fmt.Errorf("refused member's /healthz: %d %s", code, body)
		}
		return nil
	})
	req, err := http.NewRequest("POST", "http://"+refused.http+"/api/matches", strings.NewReader(`{"players":[{"name":"a","deck":"S1"},{"name":"b","deck":"S2"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("refused member created a match: %d", resp.StatusCode)
	}
	if code, body := health(a); code != http.StatusOK {
		t.Fatalf("the cluster's member: %d %s", code, body)
	}

	t.Setenv("MATCHD_GOSSIP_KEY", ours)
	startProc(t, "b", append(db, "--join", a.gossip)...)
}
