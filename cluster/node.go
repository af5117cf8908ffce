package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/hashicorp/memberlist"
	"google.golang.org/grpc"
)

// ErrStopped is returned by Request once Leave or Kill has begun.
var ErrStopped = errors.New("cluster: node stopped")

// Member is one cluster member as the local topology sees it.
type Member struct {
	// ID is the member's actor system ID, fresh on every process start.
	ID string `json:"id"`
	// Address is the protoactor remote "host:port" grains are hashed onto.
	Address string `json:"address"`
	// Kinds are the grain kinds the member hosts, sorted; protoactor adds its
	// own "prototopic" kind to every member.
	Kinds []string `json:"kinds"`
}

// Node is a running cluster member: a protoactor actor system with remote and
// cluster, joined to its peers through memberlist. Its methods are safe for
// concurrent use.
type Node struct {
	cfg    Config
	log    *slog.Logger
	system *actor.ActorSystem
	c      *pcluster.Cluster
	prov   *provider
	sub    *eventstream.Subscription

	topo    atomic.Pointer[topology]
	topoMu  sync.Mutex    // guards the fields below
	changed chan struct{} // closed at the next topology change
	lost    chan struct{} // closed at the next topology change in which a member left
	// Set by onEvent, acted on by afterPublish: the view (topo) changes and
	// the channels close only once the whole event stream (the disthash
	// lookup included) has the new topology. A request that routed by a
	// view newer than the lookup's would watch the new owner while
	// protoactor asked the old one to activate its grain: after a member's
	// death, a request that started while a loaded machine was still
	// publishing waited about 4 s for that ask to the dead member to fail.
	pendingTopo                *topology
	pendingChange, pendingLost bool

	evicted   chan struct{}
	evictOnce sync.Once

	stopped  atomic.Bool
	stopOnce sync.Once
	quit     chan struct{} // closed when Leave or Kill begins; stops the secrets reloader and the stall watch

	reloader *secretsReloader // nil without key or TLS files
	stall    *stallWatch
	info     map[string]string // what Describe answers (Config.Info and the member id)
	replies  *replies          // attemptLocal's reply processes
	hints    *deathHints       // peers' closed connections, confirmed as deaths at once
}

// topology is an immutable snapshot of the published cluster topology.
type topology struct {
	rdv     *pcluster.Rendezvous
	members []Member
}

// Start validates cfg, starts the actor system, the protoactor remote and
// cluster, and memberlist, and joins the seeds (in the background if none
// answers yet). It returns once this member is published locally; peers see
// it within a gossip round or two. protoactor's start sleeps 1 s.
func Start(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger.With(slog.String("node", cfg.NodeName))

	n := &Node{
		cfg:     cfg,
		log:     log,
		changed: make(chan struct{}),
		lost:    make(chan struct{}),
		evicted: make(chan struct{}),
		quit:    make(chan struct{}),
	}
	n.stall = newStallWatch(log, cfg.FailureDetection, func() int { return max(len(n.topo.Load().members)-1, 0) })
	n.topo.Store(&topology{rdv: pcluster.NewRendezvous()})

	protoLog := slog.New(quietHandler{inner: log.Handler(), min: slog.LevelWarn}).With(slog.String("lib", "protoactor"))
	n.system = actor.NewActorSystem(
		actor.WithLoggerFactory(func(s *actor.ActorSystem) *slog.Logger {
			return protoLog.With(slog.String("member", s.ID))
		}),
		actor.WithDeadLetterRequestLogging(false),
	)
	log = log.With(slog.String("member", n.system.ID))
	n.log = log
	// Before the remote starts: its resolver claims every address.
	n.replies = newReplies()
	n.system.ProcessRegistry.RegisterAddressResolver(n.replies.resolve)
	// Subscribe before the member starts: the first topology is published
	// during StartMember.
	n.sub = n.system.EventStream.Subscribe(n.onEvent)

	n.reloader = &secretsReloader{log: log, interval: cfg.Security.ReloadInterval, keyFile: cfg.Security.GossipKeyFile}
	mlc, err := n.memberlistConfig()
	if err != nil {
		return nil, err
	}
	rc, err := n.remoteConfig()
	if err != nil {
		return nil, err
	}
	n.logSecurity()
	n.prov = newProvider(mlc, cfg.Join, cfg.TopologyRepublish, cfg.LeaveTimeout, log, n.afterPublish, n.markEvicted)
	n.hints = &deathHints{p: n.prov}
	if n.reloader.tls != nil {
		n.prov.verify = n.verifyPeer
	}
	ccfg := pcluster.Configure(cfg.ClusterName, n.prov, disthash.New(), rc,
		pcluster.WithKinds(cfg.Kinds...),
		pcluster.WithRequestTimeout(cfg.RequestTimeout),
		pcluster.WithHeartbeatExpiration(cfg.FailureDetection.heartbeatExpiration()),
	)
	n.c = pcluster.New(n.system, ccfg)
	if err := n.startMember(); err != nil {
		return nil, fmt.Errorf("cluster: start member %q: %w", cfg.NodeName, err)
	}
	if err := n.startInfo(); err != nil {
		n.Kill()
		return nil, err
	}
	go n.stall.run(n.quit)
	if n.reloader.keys != nil || n.reloader.certs != nil {
		go n.reloader.run(n.quit)
	}
	return n, nil
}

// startMember runs protoactor's StartMember, which panics on every failure
// (remote listen, provider start): the panic becomes an error and whatever
// started is torn down.
func (n *Node) startMember() (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		err = fmt.Errorf("%v", r)
		if e, ok := r.(error); ok {
			err = e
		}
		n.stopped.Store(true)
		n.system.EventStream.Unsubscribe(n.sub)
		if n.prov.c == nil { // the remote may not have started: shutting it down would crash
			n.system.Shutdown()
			return
		}
		func() {
			defer func() {
				if r := recover(); r != nil { // best-effort cleanup of a half-started member
					n.log.Warn("cluster: cleanup after a failed start", slog.Any("panic", r))
				}
			}()
			n.c.Shutdown(false)
		}()
	}()
	n.c.StartMember()
	return nil
}

func (n *Node) memberlistConfig() (*memberlist.Config, error) {
	host, port, err := splitIPPort("GossipAddr", n.cfg.GossipAddr, true)
	if err != nil {
		return nil, err
	}
	c := memberlist.DefaultLANConfig()
	c.BindAddr, c.BindPort = host, port
	c.AdvertiseAddr, c.AdvertisePort = "", port
	if n.cfg.AdvertiseGossipAddr != "" {
		ahost, aport, err := splitIPPort("AdvertiseGossipAddr", n.cfg.AdvertiseGossipAddr, false)
		if err != nil {
			return nil, err
		}
		c.AdvertiseAddr, c.AdvertisePort = ahost, aport
	}
	n.cfg.FailureDetection.apply(c)
	c.Logger = newMemberlistLogger(n.log)
	if n.cfg.Security.gossipKeyed() {
		keys, err := n.cfg.Security.loadGossipKeys()
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if n.cfg.Security.GossipKeyFile != "" {
			n.reloader.keys = &fileWatcher{files: []string{n.cfg.Security.GossipKeyFile}}
			if _, err := n.reloader.keys.changed(); err != nil { // remember what was loaded
				return nil, fmt.Errorf("cluster: %w", err)
			}
		}
		ring, err := memberlist.NewKeyring(keys[1:], keys[0])
		if err != nil {
			return nil, fmt.Errorf("cluster: gossip keyring: %w", err)
		}
		// GossipVerifyIncoming and -Outgoing stay true (the default): a
		// plaintext or wrongly keyed packet or stream is dropped.
		c.Keyring, n.reloader.ring = ring, ring
	}
	return c, nil
}

// logSecurity says once, at start, how members are protected.
func (n *Node) logSecurity() {
	sec := n.cfg.Security
	if exposed := n.cfg.exposedAddrs(); len(exposed) > 0 && (!sec.gossipKeyed() || sec.TLS == nil) {
		n.log.Error("cluster: INSECURE member: gossip or remote reachable from other machines without encryption; "+
			"anyone who reaches these ports can join the cluster and send any message to any match",
			slog.Any("exposed", exposed), slog.Bool("gossip_key", sec.gossipKeyed()), slog.Bool("remote_tls", sec.TLS != nil))
		return
	}
	n.log.Info("cluster: member protection", slog.Bool("gossip_key", sec.gossipKeyed()), slog.Bool("remote_tls", sec.TLS != nil),
		slog.Bool("loopback_only", len(n.cfg.exposedAddrs()) == 0))
}

func (n *Node) remoteConfig() (*remote.Config, error) {
	cfg := n.cfg
	host, port, err := splitHostPort("RemoteAddr", cfg.RemoteAddr, true)
	if err != nil {
		return nil, err
	}
	var opts []remote.ConfigOption
	if cfg.AdvertiseRemoteAddr != "" {
		// protoactor uses the advertised host verbatim as the full address.
		opts = append(opts, remote.WithAdvertisedHost(cfg.AdvertiseRemoteAddr))
	}
	if tf := cfg.Security.TLS; tf != nil {
		src := &tlsSource{files: *tf}
		if err := src.load(); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if err := src.verifySelf(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		n.reloader.tls = src
		n.reloader.certs = &fileWatcher{files: []string{tf.CertFile, tf.KeyFile, tf.CAFile}}
		if _, err := n.reloader.certs.changed(); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		creds := mtlsCreds{src: src}
		opts = append(opts,
			remote.WithServerOptions(grpc.Creds(creds), grpc.ConnectionTimeout(remoteHandshakeTimeout)),
			remote.WithDialOptions(grpc.WithTransportCredentials(creds)))
	}
	rc := remote.Configure(host, port, opts...)
	rc.ServerOptions = append(slices.Clip(rc.ServerOptions),
		grpc.InitialWindowSize(remoteWindowSize), grpc.InitialConnWindowSize(remoteWindowSize))
	rc.DialOptions = append(slices.Clip(rc.DialOptions),
		grpc.WithInitialWindowSize(remoteWindowSize), grpc.WithInitialConnWindowSize(remoteWindowSize))
	rc.MaxRetryCount = remoteMaxRetryCount
	rc.EndpointWriterQueueSize = endpointWriterQueueSize
	return rc, nil
}

// onEvent runs on protoactor's event stream. ClusterTopology is published
// synchronously under the member list lock, so this stays short.
func (n *Node) onEvent(evt any) {
	if e, ok := evt.(*remote.EndpointTerminatedEvent); ok {
		if !n.cfg.FailureDetection.IgnoreClosedConnections {
			n.hints.closed(e.Address)
		}
		return
	}
	t, ok := evt.(*pcluster.ClusterTopology)
	if !ok {
		return
	}
	rdv := pcluster.NewRendezvous()
	rdv.UpdateMembers(t.Members)
	members := make([]Member, 0, len(t.Members))
	for _, m := range t.Members {
		kinds := slices.Clone(m.Kinds)
		slices.Sort(kinds)
		members = append(members, Member{ID: m.Id, Address: m.Address(), Kinds: kinds})
	}
	slices.SortFunc(members, func(a, b Member) int { return compareStrings(a.Address, b.Address) })

	n.topoMu.Lock()
	n.pendingTopo = &topology{rdv: rdv, members: members}
	n.pendingChange = true
	n.pendingLost = n.pendingLost || len(t.Left) > 0
	n.topoMu.Unlock()

	n.log.Info("cluster topology changed", slog.Int("members", len(t.Members)),
		slog.Int("joined", len(t.Joined)), slog.Int("left", len(t.Left)))
}

// afterPublish takes the view of a topology change published just now and
// wakes its waiters.
func (n *Node) afterPublish() {
	n.topoMu.Lock()
	defer n.topoMu.Unlock()
	if n.pendingTopo != nil {
		n.topo.Store(n.pendingTopo)
		n.pendingTopo = nil
	}
	if n.pendingChange {
		close(n.changed)
		n.changed = make(chan struct{})
	}
	if n.pendingLost {
		close(n.lost)
		n.lost = make(chan struct{})
	}
	n.pendingChange, n.pendingLost = false, false
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Joined returns a channel closed once this member has reached one of its
// seeds (immediately when it has none). Until then its view holds only
// itself, and it would think it owns every identity.
func (n *Node) Joined() <-chan struct{} {
	return n.prov.joined
}

// ErrNotAdmitted is wrapped by Node.Admitted's error: this member is not
// part of its cluster (refused by a seed, or unable to prove itself over
// mutual TLS), so it must serve no player and activate no grain.
var ErrNotAdmitted = errors.New("cluster: this member is not admitted to its cluster")

// Admitted returns nil while this member may act as part of its cluster,
// else an error wrapping ErrNotAdmitted that says why. A member whose seeds
// are all unreachable is admitted (it may be the cluster's first); one that
// reaches a seed that refuses it (another gossip key or cluster name) is not
// until a join succeeds. (A member whose own certificate does not verify
// against its CA does not start at all.) Membership alone never makes a
// member safe to write: the store's fencing does; this keeps a refused
// process from serving players and from fencing the real owners of their
// matches.
func (n *Node) Admitted() error { return n.prov.admitted() }

// verifyPeer proves that the remote at address passes mutual TLS with this
// member's certificate and CA: a TLS handshake, nothing sent.
func (n *Node) verifyPeer(address string) error {
	ctx, cancel := context.WithTimeout(context.Background(), remoteHandshakeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return fmt.Errorf("dial remote %s: %w", address, err)
	}
	defer func() { _ = conn.Close() }() // a probe only
	_ = conn.SetDeadline(time.Now().Add(remoteHandshakeTimeout))
	tc, _, err := mtlsCreds{src: n.reloader.tls}.ClientHandshake(ctx, address, conn)
	if err != nil {
		return err
	}
	return tc.Close()
}

// TopologyChanged returns a channel that is closed at the next topology
// change (a member joined or left this member's view).
func (n *Node) TopologyChanged() <-chan struct{} {
	n.topoMu.Lock()
	defer n.topoMu.Unlock()
	return n.changed
}

// MemberLost returns a channel closed at the next topology change in which
// a member left (it left, died or was declared dead): its matches come
// back on the survivors then, and requests in flight to it are worth
// re-sending.
func (n *Node) MemberLost() <-chan struct{} {
	n.topoMu.Lock()
	defer n.topoMu.Unlock()
	return n.lost
}

// hasMember reports whether addr is a member in the current topology.
func (n *Node) hasMember(addr string) bool {
	for _, m := range n.topo.Load().members {
		if m.Address == addr {
			return true
		}
	}
	return false
}

// Members returns the current topology, sorted by address: the members this
// node routes to, self included.
func (n *Node) Members() []Member {
	ms := n.topo.Load().members
	out := make([]Member, len(ms))
	for i, m := range ms {
		out[i] = Member{ID: m.ID, Address: m.Address, Kinds: slices.Clone(m.Kinds)}
	}
	return out
}

// OwnerAddress returns the address of the member that owns identity of kind
// in this node's current view, by the same rendezvous hash the disthash
// identity lookup routes with; "" when no member hosts kind. Compare it with
// Self.
func (n *Node) OwnerAddress(identity, kind string) string {
	return n.topo.Load().rdv.GetByClusterIdentity(&pcluster.ClusterIdentity{Identity: identity, Kind: kind})
}

// Self returns this member's address ("host:port"), as Members and
// OwnerAddress report it.
func (n *Node) Self() string {
	return n.system.Address()
}

// ID returns this member's ID (the actor system ID, new on every Start).
func (n *Node) ID() string {
	return n.system.ID
}

// GossipAddr returns the address memberlist advertises ("ip:port"); with
// GossipAddr port 0 it carries the port actually bound.
func (n *Node) GossipAddr() string {
	return n.prov.gossipAddr
}

// System returns the actor system, to spawn and address plain actors.
func (n *Node) System() *actor.ActorSystem {
	return n.system
}

// Cluster returns the protoactor cluster, for what this package does not
// wrap. Do not call its Shutdown: use Leave or Kill.
func (n *Node) Cluster() *pcluster.Cluster {
	return n.c
}

// ForgetPID drops the cached PID of identity (call it when a grain ends for
// good): protoactor's PID cache is unbounded and is otherwise only cleaned
// when a request fails or a member leaves.
func (n *Node) ForgetPID(identity, kind string) {
	n.c.PidCache.Remove(identity, kind)
}

// Evicted returns a channel closed when a peer tells this member that it was
// declared dead although it is alive (it stalled past the suspicion timeout,
// or was partitioned away, and memberlist then readmitted it). protoactor
// never readmits a member ID that left the topology, so peers will not route
// to this member any more: the process should Leave and start a new Node (or
// exit and be restarted). Its grains may still run meanwhile; the store's
// fencing keeps that safe. Peers repeat the notice on every republish tick
// while the member stays in their memberlist.
func (n *Node) Evicted() <-chan struct{} {
	return n.evicted
}

func (n *Node) markEvicted() {
	n.evictOnce.Do(func() {
		n.log.Error("cluster: peers declared this member dead; it must restart to rejoin")
		close(n.evicted)
	})
}

// Leave stops this member gracefully (docs/cluster.md §5.3): it leaves the
// membership first so peers route this member's identities elsewhere, waits
// a few gossip rounds for them to notice, then lets protoactor poison the
// local grains (each drains its mailbox first), stop gossip and close the
// remote. The caller should already have told its sessions to reconnect and
// its grains to flush. It returns ctx.Err() if ctx ends first (the shutdown
// goes on in the background). Calls after the first return nil at once.
func (n *Node) Leave(ctx context.Context) error {
	first := false
	n.stopOnce.Do(func() {
		first = true
		n.stopped.Store(true)
		close(n.quit)
	})
	if !first {
		return nil
	}
	if err := n.prov.leave(n.cfg.LeaveTimeout); err != nil {
		n.log.Warn("cluster: leave broadcast not confirmed; peers will detect the departure", slog.Any("error", err))
	}
	grace := 3 * n.cfg.FailureDetection.GossipInterval
	select {
	case <-ctx.Done():
	case <-time.After(grace):
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.c.Shutdown(true)
		n.system.EventStream.Unsubscribe(n.sub)
	}()
	select {
	case <-done:
		n.log.Info("cluster member left")
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster: leave: %w", ctx.Err())
	}
}

// Kill stops this member abruptly, as a crash would look to its peers: no
// leave message, no grain shutdown (in-process grains keep running as
// zombies, which is what fencing must handle), the remote server and
// memberlist closed so peers detect the failure. For tests (docs/cluster.md §6).
func (n *Node) Kill() {
	n.stopOnce.Do(func() {
		n.stopped.Store(true)
		close(n.quit)
		n.system.Shutdown()
		n.c.Remote.Shutdown(false)
		if err := n.prov.Shutdown(false); err != nil {
			n.log.Warn("cluster: kill: memberlist shutdown", slog.Any("error", err))
		}
		n.system.EventStream.Unsubscribe(n.sub)
	})
}

// GossipKeys returns the fingerprints (KeyFingerprint) of the installed
// gossip keys, the one that encrypts first; nil without a keyring.
func (n *Node) GossipKeys() []string {
	if n.reloader.ring == nil {
		return nil
	}
	return fingerprints(n.reloader.ring.GetKeys())
}
