package deploy

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var memberLine = regexp.MustCompile(`^member (\d+) pid=(\d+) http=(\S+) tcp=(\S+) gossip=(\S+) remote=(\S+) id=(\S+)`)

// TestLocalCluster starts two members and PostgreSQL with local-cluster.sh,
// checks the printed addresses and token against the running members (one
// member creates a match, the other issues its ticket with the same token),
// and checks that stop leaves no process and no directory behind.
func TestLocalCluster(t *testing.T) {
	if _, err := os.Stat("/usr/lib/postgresql/15/bin/initdb"); err != nil && os.Geteuid() != 0 && os.Getenv("PG_BIN") == "" {
		t.Skip("PostgreSQL 15 is not installed and pg-throwaway.sh cannot install it without root")
	}
	s := theServer(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("./local-cluster.sh", args...)
		cmd.Env = append(os.Environ(), "MATCHGRAIN_CLUSTER_DIR="+dir, "MATCHD_BIN="+s.bin)
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("local-cluster.sh %v: %v\n%s\n%s", args, err, out, stderr)
		}
		return string(out)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd := exec.Command("./local-cluster.sh", "stop")
			cmd.Env = append(os.Environ(), "MATCHGRAIN_CLUSTER_DIR="+dir)
			_ = cmd.Run()
		}
	})
	// With cluster-secrets.sh's files the members gossip encrypted and talk
	// over mutual TLS, as on a real network (loopback would not require it).
	args := []string{"start", "2"}
	if haveTool(t, "openssl", "cluster-secrets.sh is not exercised") {
		secrets := filepath.Join(t.TempDir(), "secrets")
		gen := exec.Command("./cluster-secrets.sh", secrets, "member=127.0.0.1")
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("cluster-secrets.sh: %v\n%s", err, out)
		}
		args = append(args, "--", "--gossip-key-file", filepath.Join(secrets, "gossip.key"),
			"--cluster-tls-ca", filepath.Join(secrets, "ca.crt"),
			"--cluster-tls-cert", filepath.Join(secrets, "member.crt"),
			"--cluster-tls-key", filepath.Join(secrets, "member.key"))
	}
	out := run(args...)
	var https, pids []string
	token := ""
	for _, line := range strings.Split(out, "\n") {
		if m := memberLine.FindStringSubmatch(line); m != nil {
			https, pids = append(https, m[3]), append(pids, m[2])
		}
		if path, ok := strings.CutPrefix(line, "admin-token-file "); ok {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read the printed admin token file: %v", err)
			}
			token = strings.TrimSpace(string(b))
		}
	}
	if len(https) != 2 || token == "" {
		t.Fatalf("start printed %d members and no readable token file:\n%s", len(https), out)
	}
	// The secrets reach the members through their environment: neither the
	// output nor a member's command line may hold them.
	if strings.Contains(out, token) {
		t.Errorf("start printed the admin token:\n%s", out)
	}
	for _, pid := range pids {
		cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil {
			t.Fatalf("read member %s's command line: %v", pid, err)
		}
		if strings.Contains(string(cmdline), token) {
			t.Errorf("member %s has the admin token on its command line", pid)
		}
	}
	status := run("status")
	if strings.Count(status, "state=running healthz=200") != 2 {
		t.Errorf("status does not show two healthy members:\n%s", status)
	}
	api := func(addr, path, body string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s on %s: %v", path, addr, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s on %s: %d %s", path, addr, resp.StatusCode, b)
		}
		return string(b)
	}
	// Creating a match wakes its grain on its owner: with eight matches
	// both members own some (all on one: 1 in 128), so requests cross the
	// remote between them.
	for i := range 8 {
		created := api(https[i%2], "/api/matches", `{"players":[{"name":"a","deck":"S1"},{"name":"b","deck":"S2"}]}`)
		id := regexp.MustCompile(`"matchId":"([^"]+)"`).FindStringSubmatch(created)
		if id == nil {
			t.Fatalf("create match: %s", created)
		}
		if ticket := api(https[1-i%2], "/api/game/tickets", `{"matchId":"`+id[1]+`","seat":1}`); !strings.Contains(ticket, `"ticket"`) {
			t.Fatalf("ticket from the other member: %s", ticket)
		}
	}
	for i := 1; i <= 2; i++ {
		b, err := os.ReadFile(filepath.Join(dir, "member-"+string(rune('0'+i))+".log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"INSECURE", "refused gossip", "level=ERROR"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("member %d log has %q:\n%s", i, bad, b)
			}
		}
	}

	run("stop")
	stopped = true
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("stop left %s behind (%v)", dir, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		var n int
		for _, c := range pid {
			n = n*10 + int(c-'0')
		}
		for syscall.Kill(n, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if syscall.Kill(n, 0) == nil {
			t.Errorf("member pid %d still runs after stop", n)
		}
	}
}
