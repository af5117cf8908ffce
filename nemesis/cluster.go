package nemesis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Ports every member listens on at its own address.
const (
	httpPort   = 8080
	gossipPort = 7946
	remotePort = 8090
	pgPort     = 5432
)

// dbURL is the harness's PostgreSQL, reachable from the members' and the
// client's namespaces only.
var dbURL = fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", netip.AddrPortFrom(pgAddr, pgPort))

// childAttr makes a child die with the harness: the kernel sends SIGKILL
// when the process that started it goes, so even a harness killed with -9
// leaves no member running (Cleanup removes what remains).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// pgBin finds PostgreSQL's server binaries: version 15 if installed (as
// deploy/pg-throwaway.sh prefers), else the newest.
func pgBin() (string, error) {
	if _, err := os.Stat("/usr/lib/postgresql/15/bin/initdb"); err == nil {
		return "/usr/lib/postgresql/15/bin", nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", errors.New("no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql-15)")
	}
	slices.Sort(found)
	return filepath.Dir(found[len(found)-1]), nil
}

// asPostgres is the command prefix that runs a PostgreSQL binary as the
// postgres user (the server refuses to run as root).
var asPostgres = []string{"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"}

// startPG initializes a throwaway cluster under dir and starts its server in
// the PostgreSQL namespace, listening on that namespace's address only,
// without fsync (the harness tests the members, not the disk).
func startPG(ctx context.Context, dir string) (*exec.Cmd, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := run(ctx, "chown", "postgres:postgres", dir); err != nil {
		return nil, err
	}
	initdb := append(slices.Clone(asPostgres), filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
	if err := run(ctx, initdb[0], initdb[1:]...); err != nil {
		return nil, err
	}
	hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("pg_hba.conf: %w", err)
	}
	_, err = fmt.Fprintf(hba, "host all all %s trust\n", Subnet)
	if cerr := hba.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("pg_hba.conf: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return nil, err
	}
	args := append([]string{"netns", "exec", pgNS}, asPostgres...)
	args = append(args, filepath.Join(bin, "postgres"), "-D", data, "-c", "listen_addresses="+pgAddr.String(),
		"-c", "port="+strconv.Itoa(pgPort), "-c", "unix_socket_directories="+dir, "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300")
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() { _ = cmd.Wait(); _ = logFile.Close() }() // reaped; its log says why it ended
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, dbURL)
		if err == nil {
			_ = conn.Close(cctx) // only a probe
			cancel()
			return cmd, nil
		}
		cancel()
		if time.Now().After(deadline) {
			return cmd, fmt.Errorf("postgres at %s not ready after 30 s (log %s): %w", dbURL, logFile.Name(), err)
		}
		time.Sleep(200 * time.Millisecond) // polling the server's readiness
	}
}

// member is one matchd process in its namespace, restarted by its
// supervisor when it exits on its own (as a real supervisor would: a member
// declared dead exits and must come back with a new id).
type member struct {
	n    int
	bin  string
	args []string
	log  *os.File
	lg   *slog.Logger

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd is reaped
	down     bool          // killed on purpose: the supervisor leaves it down
	stopping bool          // the harness is ending
	restarts int           // exits the supervisor restarted it after
}

func (m *member) name() string { return fmt.Sprintf("m%d", m.n) }

// httpAddr is where clients reach the member's edge.
func (m *member) httpAddr() string {
	return netip.AddrPortFrom(MemberAddr(m.n), httpPort).String()
}

// memberArgs are the flags of member n of members. Failure detection and
// the seat keep-alive are the chaos tests' scaled-down values.
func memberArgs(n, members int, fd Timing, url string, ha bool, adminToken, ticketKey string) []string {
	addr := MemberAddr(n).String()
	var join []string
	for i := 1; i <= members; i++ {
		if i != n {
			join = append(join, netip.AddrPortFrom(MemberAddr(i), gossipPort).String())
		}
	}
	args := []string{
		"--node-name", fmt.Sprintf("m%d", n),
		"--listen", net.JoinHostPort(addr, strconv.Itoa(httpPort)),
		"--gossip-addr", net.JoinHostPort(addr, strconv.Itoa(gossipPort)),
		"--remote-addr", net.JoinHostPort(addr, strconv.Itoa(remotePort)),
		"--join", strings.Join(join, ","),
		// The harness's subnet is reachable only from its namespaces.
		"--insecure-cluster",
		"--database-url", url,
		"--admin-token", adminToken, "--ticket-key", ticketKey,
		"--log-level", "warn",
		"--probe-interval", fd.ProbeInterval.String(),
		"--seat-keepalive", fd.SeatKeepalive.String(),
		"--reclaim-interval", fd.ReclaimInterval.String(),
		// Every client comes from the one client namespace, and checks re-send quickly.
		"--max-connections-per-address", "100000",
		"--intents-per-second", "200",
	}
	if ha {
		// A failover takes seconds: a store call waits for the new primary
		// (docs/operations.md, the HA database).
		args = append(args, "--store-timeout", "30s")
	}
	return args
}

// start starts the process and waits for its ready line.
func (m *member) start() error {
	cmd := exec.Command("ip", append([]string{"netns", "exec", MemberNS(m.n), m.bin}, m.args...)...)
	cmd.Stderr = m.log
	cmd.SysProcAttr = childAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.name(), err)
	}
	exited := make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.HasPrefix(sc.Text(), "matchd ready ") {
				close(ready)
				signalled = true
			}
		}
		_ = cmd.Wait() // the exit status matters only to the log
		m.lg.Info("member exited", "member", m.name(), "state", cmd.ProcessState.String())
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	select {
	case <-ready:
		go m.supervise(exited)
		return nil
	case <-exited:
		return fmt.Errorf("%s exited before ready (log %s)", m.name(), m.log.Name())
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s not ready after 60 s (log %s)", m.name(), m.log.Name())
	}
}

// supervise restarts the member once its process exits, unless the harness
// took it down on purpose or is ending.
func (m *member) supervise(exited chan struct{}) {
	<-exited
	for {
		m.mu.Lock()
		leave := m.down || m.stopping || m.exited != exited
		if !leave {
			m.restarts++
		}
		m.mu.Unlock()
		if leave {
			return
		}
		m.lg.Warn("member exited on its own; restarting", "member", m.name())
		time.Sleep(time.Second) // a supervisor's restart delay
		err := m.start()
		if err == nil {
			return
		}
		m.lg.Error("restart failed", "member", m.name(), "err", err)
	}
}

// signal sends sig to the member's process.
func (m *member) signal(sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.cmd.Process == nil {
		return fmt.Errorf("%s: no process", m.name())
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to %s: %w", sig, m.name(), err)
	}
	return nil
}

// kill takes the member down with SIGKILL and waits until it is reaped;
// the supervisor leaves it down until restart.
func (m *member) kill() error {
	m.mu.Lock()
	m.down = true
	exited := m.exited
	m.mu.Unlock()
	// A stopped process dies of SIGKILL too.
	if err := m.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-exited
	return nil
}

// restart starts a member taken down by kill.
func (m *member) restart() error {
	m.mu.Lock()
	m.down = false
	m.mu.Unlock()
	return m.start()
}

// stop ends the member for good at the end of the run.
func (m *member) stop() {
	m.mu.Lock()
	m.stopping = true
	exited := m.exited
	m.mu.Unlock()
	_ = m.signal(syscall.SIGCONT) // a paused member cannot drain
	if err := m.signal(syscall.SIGKILL); err == nil {
		<-exited
	}
}
