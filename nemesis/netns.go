package nemesis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Prefix names everything the harness creates outside its own processes:
// network namespaces, the bridge's ports, temporary directories, the lock
// file. Cleanup removes whatever carries it, so a run that was killed leaves
// nothing behind once the next one starts (or its watchdog ends).
const Prefix = "mgn-"

// Subnet is the harness's network. Nobody else on this machine uses it; the
// root namespace holds a blackhole route for it while the harness runs, so
// a process started outside the namespaces by mistake fails at once instead
// of sending test traffic off the machine.
var Subnet = netip.MustParsePrefix("10.77.0.0/24")

// Namespaces of the harness: the bridge, PostgreSQL, the client (workload
// and checker), and member i (1-based) at MemberNS(i).
const (
	bridgeNS = Prefix + "br"
	pgNS     = Prefix + "pg"
	clientNS = ClientNamespace
	bridge   = "br0"
	nftTable = "mgn"
)

// Addresses inside Subnet.
var (
	pgAddr     = netip.MustParseAddr("10.77.0.2")
	clientAddr = netip.MustParseAddr("10.77.0.100")
)

// MemberNS is the network namespace of member i (1-based).
func MemberNS(i int) string { return Prefix + "m" + strconv.Itoa(i) }

// MemberAddr is the address of member i (1-based) in its namespace.
func MemberAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 77, 0, byte(10 + i)})
}

// port is the bridge-side veth of a namespace: the name nft rules and tc
// use to cut or slow that namespace's link.
func port(ns string) string { return "p-" + strings.TrimPrefix(ns, Prefix) }

// lockPath serializes harness runs on one machine: a second run would
// remove the first one's namespaces as stale.
const lockPath = "/run/" + Prefix + "nemesis.lock"

// run runs one command and returns its error with the command and its output.
func run(ctx context.Context, name string, args ...string) error {
	_, err := output(ctx, name, args...)
	return err
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// inNS runs a command inside network namespace ns.
func inNS(ctx context.Context, ns, name string, args ...string) error {
	return run(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// nft feeds a script to nft in the bridge's namespace.
func nft(ctx context.Context, script string) error {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", bridgeNS, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft -f - in %s: %w: %s\nscript:\n%s", bridgeNS, err, strings.TrimSpace(string(out)), script)
	}
	return nil
}

// Lock takes the machine-wide harness lock, failing if another run holds it.
// The lock lives as long as the returned file stays open.
func Lock() (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", lockPath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another nemesis run holds %s: %w", lockPath, err)
	}
	return f, nil
}

// Setup builds the network for members: one namespace per node, each
// linked by a veth pair to a bridge in a namespace of its own, the nft table
// faults add rules to, and the root namespace's blackhole route. It first
// removes leftovers of a killed run.
func Setup(ctx context.Context, members int) error {
	if err := Cleanup(ctx); err != nil {
		return fmt.Errorf("remove leftovers: %w", err)
	}
	if err := run(ctx, "ip", "route", "replace", "blackhole", Subnet.String()); err != nil {
		return err
	}
	if err := run(ctx, "ip", "netns", "add", bridgeNS); err != nil {
		return err
	}
	steps := [][]string{
		{"ip", "-n", bridgeNS, "link", "set", "lo", "up"},
		{"ip", "-n", bridgeNS, "link", "add", bridge, "type", "bridge"},
		{"ip", "-n", bridgeNS, "link", "set", bridge, "up"},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	nodes := map[string]netip.Addr{pgNS: pgAddr, clientNS: clientAddr}
	for i := 1; i <= members; i++ {
		nodes[MemberNS(i)] = MemberAddr(i)
	}
	for ns, addr := range nodes {
		if err := addNode(ctx, ns, addr); err != nil {
			return err
		}
	}
	return nft(ctx, fmt.Sprintf("table bridge %s {\n\tchain faults {\n\t\ttype filter hook forward priority 0; policy accept;\n\t}\n}\n", nftTable))
}

// addNode creates namespace ns with eth0 at addr, its peer port(ns) on the bridge.
func addNode(ctx context.Context, ns string, addr netip.Addr) error {
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port(ns), "netns", bridgeNS},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", ns, "addr", "add", netip.PrefixFrom(addr, Subnet.Bits()).String(), "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
		{"ip", "-n", bridgeNS, "link", "set", port(ns), "master", bridge},
		{"ip", "-n", bridgeNS, "link", "set", port(ns), "up"},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	return nil
}

// Cleanup removes everything a run creates, whether or not it exists: it
// kills every process inside the harness's namespaces, deletes the
// namespaces (their veths and the bridge go with them), the blackhole route
// and the temporary directories. Safe to call at any time no run holds
// the lock.
func Cleanup(ctx context.Context) error {
	var errs []error
	list, err := output(ctx, "ip", "netns", "list")
	if err != nil {
		errs = append(errs, err)
	}
	for _, line := range strings.Split(list, "\n") {
		ns, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if !strings.HasPrefix(ns, Prefix) {
			continue
		}
		killNS(ctx, ns)
		if err := run(ctx, "ip", "netns", "delete", ns); err != nil {
			errs = append(errs, err)
		}
	}
	if out, err := output(ctx, "ip", "route", "show", "type", "blackhole", Subnet.String()); err == nil && strings.TrimSpace(out) != "" {
		if err := run(ctx, "ip", "route", "del", "blackhole", Subnet.String()); err != nil {
			errs = append(errs, err)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), Prefix+"*"))
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killNS kills every process in namespace ns with SIGKILL and waits briefly
// for them to go, so that deleting the namespace frees its addresses.
func killNS(ctx context.Context, ns string) {
	for range 50 {
		out, _ := output(ctx, "ip", "netns", "pids", ns)
		pids := strings.Fields(out)
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ClientNamespace is where the workload and the checker run (cmd/nemesis
// starts the harness there).
const ClientNamespace = Prefix + "cl"
