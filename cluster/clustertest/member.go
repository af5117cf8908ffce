package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/cluster"
)

// Environment variables RunMember reads (set by StartMember).
const (
	EnvCluster        = "CLUSTERTEST_CLUSTER"
	EnvJoin           = "CLUSTERTEST_JOIN" // comma-separated gossip addresses
	EnvEdgeOnly       = "CLUSTERTEST_EDGE_ONLY"
	EnvRequestTimeout = "CLUSTERTEST_REQUEST_TIMEOUT"
	EnvLogLevel       = "CLUSTERTEST_LOG_LEVEL" // debug, info, warn (default), error
	EnvGossipAddr     = "CLUSTERTEST_GOSSIP_ADDR"
	EnvRemoteAddr     = "CLUSTERTEST_REMOTE_ADDR"
	EnvFailureDetect  = "CLUSTERTEST_FAILURE_DETECTION" // JSON cluster.FailureDetection
	EnvSecurity       = "CLUSTERTEST_SECURITY"          // JSON cluster.Security
)

// RelaxedFailureDetection returns failure-detection settings for tests that
// kill no member: a suspected member has 3 s to refute when a second member
// confirms the suspicion and 18 s otherwise (the defaults: about 1.2 s and
// 7 s), so children starved of CPU (several -race processes on two cores) are
// not evicted by mistake. Tests that measure failover keep the defaults.
func RelaxedFailureDetection() cluster.FailureDetection {
	return cluster.FailureDetection{
		ProbeInterval: time.Second,
		ProbeTimeout:  500 * time.Millisecond,
	}
}

// Ready keys a member child reports.
const (
	ReadyID         = "id"
	ReadyGossipAddr = "gossip"
	ReadyRemoteAddr = "remote"
)

// Built-in member commands (see RunMember).
const (
	CmdMembers = "members"
	CmdOwner   = "owner"
	CmdLeave   = "leave"
)

// EventEvicted is emitted by a member child when its Node reports Evicted.
const EventEvicted = "evicted"

// DefaultHelperTest is the helper test StartMember runs unless told otherwise.
const DefaultHelperTest = "TestHelperMember"

// MemberOptions describes a member child for StartMember.
type MemberOptions struct {
	// Name labels the member; it becomes cluster.Config.NodeName.
	Name string
	// HelperTest is the test function that calls RunMember. Default
	// DefaultHelperTest.
	HelperTest string
	// ClusterName defaults to "clustertest".
	ClusterName string
	// Join lists seed gossip addresses.
	Join []string
	// EdgeOnly starts the member without kinds.
	EdgeOnly bool
	// GossipAddr and RemoteAddr default to "127.0.0.1:0" (free ports); set
	// them to restart a member on the addresses of a killed one.
	GossipAddr, RemoteAddr string
	// RequestTimeout sets cluster.Config.RequestTimeout (default 2 s).
	RequestTimeout time.Duration
	// FailureDetection sets cluster.Config.FailureDetection (zero: the
	// package defaults; see RelaxedFailureDetection).
	FailureDetection cluster.FailureDetection
	// Security sets cluster.Config.Security (gossip keys, remote TLS).
	Security cluster.Security
	// Env holds extra KEY=VALUE pairs for the child.
	Env []string
	// Wrap is ChildOptions.Wrap: a command the child runs through.
	Wrap []string
}

// Member is a cluster member running in a child process.
type Member struct {
	*Child
	// ID is the member's actor system ID; GossipAddr and RemoteAddr are the
	// bound addresses (RemoteAddr is what Owner and Members report).
	ID, GossipAddr, RemoteAddr string
}

// StartMember starts one member child on free loopback ports and waits until
// it runs (protoactor's start takes over a second).
func StartMember(t testing.TB, opts MemberOptions) *Member {
	t.Helper()
	m, err := startMember(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func startMember(t testing.TB, opts MemberOptions) (*Member, error) {
	if opts.HelperTest == "" {
		opts.HelperTest = DefaultHelperTest
	}
	if opts.ClusterName == "" {
		opts.ClusterName = "clustertest"
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 2 * time.Second
	}
	env := []string{
		EnvCluster + "=" + opts.ClusterName,
		EnvJoin + "=" + strings.Join(opts.Join, ","),
		EnvRequestTimeout + "=" + opts.RequestTimeout.String(),
	}
	if opts.EdgeOnly {
		env = append(env, EnvEdgeOnly+"=1")
	}
	if opts.GossipAddr != "" {
		env = append(env, EnvGossipAddr+"="+opts.GossipAddr)
	}
	if opts.RemoteAddr != "" {
		env = append(env, EnvRemoteAddr+"="+opts.RemoteAddr)
	}
	if opts.FailureDetection != (cluster.FailureDetection{}) {
		fd, err := json.Marshal(opts.FailureDetection)
		if err != nil {
			return nil, fmt.Errorf("clustertest: encode failure detection: %w", err)
		}
		env = append(env, EnvFailureDetect+"="+string(fd))
	}
	if sec := opts.Security; sec.GossipKeys != nil || sec.GossipKeyFile != "" || sec.TLS != nil || sec.Insecure || sec.ReloadInterval != 0 {
		b, err := json.Marshal(sec)
		if err != nil {
			return nil, fmt.Errorf("clustertest: encode security: %w", err)
		}
		env = append(env, EnvSecurity+"="+string(b))
	}
	c, err := startChild(t, ChildOptions{Name: opts.Name, TestName: opts.HelperTest, Env: append(env, opts.Env...), Wrap: opts.Wrap})
	if err != nil {
		return nil, err
	}
	m := &Member{Child: c, ID: c.Ready[ReadyID], GossipAddr: c.Ready[ReadyGossipAddr], RemoteAddr: c.Ready[ReadyRemoteAddr]}
	if m.ID == "" || m.GossipAddr == "" || m.RemoteAddr == "" {
		return nil, fmt.Errorf("clustertest: member %s reported incomplete ready info %v", opts.Name, c.Ready)
	}
	return m, nil
}

// StartCluster starts n members named base.Name+"0".. (or "m0"..) at once,
// all joining member 0, and waits until every member sees all n.
func StartCluster(t testing.TB, n int, base MemberOptions) []*Member {
	t.Helper()
	prefix := base.Name
	if prefix == "" {
		prefix = "m"
	}
	opts := make([]MemberOptions, n)
	for i := range opts {
		opts[i] = base
		opts[i].Name = fmt.Sprintf("%s%d", prefix, i)
	}
	return StartClusterWith(t, opts...)
}

// StartClusterWith starts one member per option concurrently: the first on a
// free gossip port chosen here, the others joining it (their join retries
// until it is up), then waits until every member sees them all.
func StartClusterWith(t testing.TB, opts ...MemberOptions) []*Member {
	t.Helper()
	if len(opts) == 0 {
		t.Fatal("clustertest: StartClusterWith needs at least one member")
	}
	if opts[0].GossipAddr == "" {
		opts[0].GossipAddr = FreeAddr(t)
	}
	members := make([]*Member, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		if i > 0 {
			o.Join = append([]string{opts[0].GossipAddr}, o.Join...)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			members[i], errs[i] = startMember(t, o)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	WaitMembers(t, 30*time.Second, len(members), members...)
	return members
}

// WaitMembers waits until each of members sees exactly want members, and
// logs how long that took (the numbers behind the tests' bounds).
func WaitMembers(t testing.TB, timeout time.Duration, want int, members ...*Member) {
	t.Helper()
	start := time.Now()
	defer func() {
		if !t.Failed() {
			t.Logf("clustertest: %d member(s) saw %d after %v (bound %v)", len(members), want, time.Since(start).Round(time.Millisecond), timeout)
		}
	}()
	Eventually(t, timeout, 50*time.Millisecond, func() error {
		for _, m := range members {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			ms, err := m.Members(ctx)
			cancel()
			if err != nil {
				return err
			}
			if len(ms) != want {
				return fmt.Errorf("member %s sees %d members, want %d", m.Name, len(ms), want)
			}
		}
		return nil
	})
}

// Members returns the member's current topology.
func (m *Member) Members(ctx context.Context) ([]cluster.Member, error) {
	out, err := m.Call(ctx, CmdMembers, "")
	if err != nil {
		return nil, err
	}
	var ms []cluster.Member
	if err := json.Unmarshal([]byte(out), &ms); err != nil {
		return nil, fmt.Errorf("clustertest: decode members from %s: %w", m.Name, err)
	}
	return ms, nil
}

// Owner returns the address that owns identity of kind in the member's view.
func (m *Member) Owner(ctx context.Context, kind, identity string) (string, error) {
	return m.Call(ctx, CmdOwner, kind+"/"+identity)
}

// Leave makes the member leave gracefully (Node.Leave); the process stays up
// until the test ends or Close is called.
func (m *Member) Leave(ctx context.Context) error {
	_, err := m.Call(ctx, CmdLeave, "")
	return err
}

// MemberHandler runs a test-specific command in a member child.
type MemberHandler func(ctx context.Context, n *cluster.Node, arg string) (string, error)

// MemberSpec says what a member child hosts and which extra commands it
// understands.
type MemberSpec struct {
	// Kinds are hosted unless the parent asked for an edge-only member.
	Kinds []*pcluster.Kind
	// Handlers add commands; the built-ins are CmdMembers, CmdOwner and
	// CmdLeave.
	Handlers map[string]MemberHandler
	// Configure may adjust the config before Start.
	Configure func(*cluster.Config)
	// OnStart runs once the node is up, before ready is reported (e.g. to
	// start a Reclaimer).
	OnStart func(n *cluster.Node)
}

// RunMember runs in a child started by StartMember: it starts a cluster.Node
// on 127.0.0.1 with free ports, reports ready and serves commands until the
// parent closes stdin. It never returns.
func RunMember(spec MemberSpec) {
	name := os.Getenv(EnvName)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()})).With(slog.String("child", name))
	cfg := cluster.Config{
		NodeName:    name,
		GossipAddr:  envOr(EnvGossipAddr, "127.0.0.1:0"),
		RemoteAddr:  envOr(EnvRemoteAddr, "127.0.0.1:0"),
		ClusterName: os.Getenv(EnvCluster),
		Logger:      log,
	}
	if j := os.Getenv(EnvJoin); j != "" {
		cfg.Join = strings.Split(j, ",")
	}
	if os.Getenv(EnvEdgeOnly) != "1" {
		cfg.Kinds = spec.Kinds
	}
	if d, err := time.ParseDuration(os.Getenv(EnvRequestTimeout)); err == nil {
		cfg.RequestTimeout = d
	}
	if fd := os.Getenv(EnvFailureDetect); fd != "" {
		if err := json.Unmarshal([]byte(fd), &cfg.FailureDetection); err != nil {
			fmt.Fprintf(os.Stderr, "clustertest: %s: %v\n", EnvFailureDetect, err)
			os.Exit(2)
		}
	}
	if sec := os.Getenv(EnvSecurity); sec != "" {
		if err := json.Unmarshal([]byte(sec), &cfg.Security); err != nil {
			fmt.Fprintf(os.Stderr, "clustertest: %s: %v\n", EnvSecurity, err)
			os.Exit(2)
		}
	}
	if spec.Configure != nil {
		spec.Configure(&cfg)
	}
	node, err := cluster.Start(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clustertest: start member %s: %v\n", name, err)
		os.Exit(2)
	}
	if spec.OnStart != nil {
		spec.OnStart(node)
	}
	go func() {
		<-node.Evicted()
		Emit(EventEvicted)
	}()

	handlers := map[string]Handler{
		CmdMembers: func(context.Context, string) (string, error) {
			b, err := json.Marshal(node.Members())
			return string(b), err
		},
		CmdOwner: func(_ context.Context, arg string) (string, error) {
			kind, identity, ok := strings.Cut(arg, "/")
			if !ok {
				return "", fmt.Errorf("owner wants kind/identity, got %q", arg)
			}
			return node.OwnerAddress(identity, kind), nil
		},
		CmdLeave: func(ctx context.Context, _ string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return "", node.Leave(ctx)
		},
	}
	for cmd, h := range spec.Handlers {
		handlers[cmd] = func(ctx context.Context, arg string) (string, error) { return h(ctx, node, arg) }
	}
	Serve(map[string]string{
		ReadyID:         node.ID(),
		ReadyGossipAddr: node.GossipAddr(),
		ReadyRemoteAddr: node.Self(),
	}, handlers)
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv(EnvLogLevel))); err != nil {
		return slog.LevelWarn
	}
	return l
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
