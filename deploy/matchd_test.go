package deploy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server is what the artifacts are checked against: facts taken from a real
// matchd built from this repository, never a hand-kept list, so that new
// flags and metrics just work.
type server struct {
	bin string
	// envs maps every MATCHD_… variable to its flag's default ("" if none).
	envs map[string]string
	// series maps every exported metric name (histogram series included) to
	// its label names and their values.
	series map[string]map[string]map[string]bool
}

var (
	serverOnce sync.Once
	srv        *server
	serverErr  error
)

// theServer builds matchd once, reads its flags from --help, runs it on
// loopback with the embedded store and scrapes its /metrics.
func theServer(t *testing.T) *server {
	t.Helper()
	serverOnce.Do(func() { srv, serverErr = loadServer() })
	if serverErr != nil {
		t.Fatalf("matchd: %v", serverErr)
	}
	return srv
}

var (
	helpFlag = regexp.MustCompile(`^\s+-([a-z0-9-]+)`)
	helpEnv  = regexp.MustCompile(`\(env (MATCHD_[A-Z0-9_]+)\)(?: \(default (.*)\))?`)
)

func loadServer() (*server, error) {
	dir, err := os.MkdirTemp("", "deploy-matchd-")
	if err != nil {
		return nil, err
	}
	s := &server{bin: filepath.Join(dir, "matchd"), envs: map[string]string{},
		series: map[string]map[string]map[string]bool{}}
	build := exec.Command("go", "build", "-o", s.bin, "./cmd/matchd")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/matchd: %v\n%s", err, out)
	}
	help, _ := exec.Command(s.bin, "--help").CombinedOutput() // exits 0 or 2 by flag package version
	flag := ""
	for _, line := range strings.Split(string(help), "\n") {
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			flag = m[1]
			continue
		}
		if m := helpEnv.FindStringSubmatch(line); m != nil && flag != "" {
			if want := "MATCHD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_")); want != m[1] {
				return nil, fmt.Errorf("flag --%s documents env %s, want %s", flag, m[1], want)
			}
			s.envs[m[1]] = strings.Trim(m[2], `"`)
		}
	}
	if len(s.envs) < 10 {
		return nil, fmt.Errorf("matchd --help lists only %d environment variables:\n%s", len(s.envs), help)
	}
	if err := s.scrape(dir); err != nil {
		return nil, err
	}
	return s, nil
}

// scrape runs matchd, makes one API request (so the request counter has a
// series) and reads /metrics.
func (s *server) scrape(dir string) error {
	const token = "deploy-test-token"
	cmd := exec.Command(s.bin, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--tcp-listen", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0", "--remote-addr", "127.0.0.1:0",
		"--admin-token", token, "--log-level", "warn")
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := regexp.MustCompile(`^matchd ready .*http=(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var addr string
	select {
	case addr = <-ready:
	case <-time.After(60 * time.Second):
		return fmt.Errorf("matchd printed no ready line in 60 s")
	}
	// One request per API route, so that the per-route request counter has
	// a series for each.
	matchID := ""
	for _, call := range []struct{ method, path, body string }{
		{"GET", "/api/decks", ""},
		{"POST", "/api/matches", `{"players":[{"name":"a","deck":"S1"},{"name":"b","deck":"S2"}]}`},
		{"POST", "/api/game/tickets", `{"matchId":"MATCH","seat":0}`},
	} {
		req, err := http.NewRequest(call.method, "http://"+addr+call.path, strings.NewReader(strings.ReplaceAll(call.body, "MATCH", matchID)))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %d %s", call.method, call.path, resp.StatusCode, b)
		}
		if m := regexp.MustCompile(`"matchId":"([^"]+)"`).FindSubmatch(b); m != nil {
			matchID = string(m[1])
		}
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return s.parseMetrics(string(body))
}

var (
	seriesLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

func (s *server) parseMetrics(text string) error {
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := seriesLine.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("unparsable /metrics line %q", line)
		}
		labels := s.series[m[1]]
		if labels == nil {
			labels = map[string]map[string]bool{}
			s.series[m[1]] = labels
		}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			if labels[p[1]] == nil {
				labels[p[1]] = map[string]bool{}
			}
			labels[p[1]][p[2]] = true
		}
	}
	if len(s.series) < 20 {
		return fmt.Errorf("/metrics has only %d series names:\n%s", len(s.series), text)
	}
	return nil
}

// checkEnv reports MATCHD_… names that matchd does not read.
func (s *server) checkEnv(t *testing.T, where, name string) {
	t.Helper()
	if !strings.HasPrefix(name, "MATCHD_") {
		return
	}
	if _, ok := s.envs[name]; !ok {
		t.Errorf("%s: %s is not an environment variable of matchd (see matchd --help)", where, name)
	}
}
