package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/hashicorp/memberlist"
	"google.golang.org/protobuf/proto"
)

// errClientMode is returned by StartClient: edge nodes are members without
// kinds, because protoactor's client mode panics on shutdown (docs/cluster.md §1.3).
var errClientMode = errors.New("cluster: client mode is not supported; start a member without kinds")

// provider is a protoactor ClusterProvider backed by memberlist
// (docs/cluster.md §1). memberlist decides who is alive; the provider only
// mirrors memberlist's live set (alive and suspect nodes, as its join, update
// and leave events report them) into MemberList.UpdateClusterTopology, on
// every event and on a periodic tick.
//
// Suspect nodes stay in the topology on purpose: protoactor blocks every
// member that leaves the topology forever, so dropping a suspect that later
// refutes would evict a healthy member.
type provider struct {
	mlConfig  *memberlist.Config // template; Name, Label, delegates and logger are set in StartMember
	seeds     []string
	republish time.Duration
	leaveWait time.Duration
	log       *slog.Logger
	// published runs after each UpdateClusterTopology, when every event
	// stream subscriber (the identity lookup included) has seen the result.
	published func()
	// evicted runs when a peer tells this member it was declared dead.
	evicted func()

	// Set by StartMember before the loops start, then read-only.
	c          *pcluster.Cluster
	ml         *memberlist.Memberlist
	meta       []byte
	gossipAddr string // advertised "ip:port", with the port actually bound

	joined   chan struct{} // closed once a seed answered (at once without seeds)
	poke     chan struct{} // capacity 1: a pending publish
	bump     chan struct{} // capacity 1: a pending incarnation bump (bumpLoop)
	stop     chan struct{} // closed once to stop the loops
	loopDone chan struct{}
	stopOnce sync.Once

	mu       sync.Mutex // guards left and shutdown, and orders Leave before Shutdown
	left     bool
	shutdown bool

	// live mirrors memberlist's live set (alive and suspect nodes) as
	// name → meta, copied in the event delegate while memberlist holds its
	// node lock: the *Node values memberlist.Members returns are updated in
	// place by its packet handler, so reading them later would race.
	liveMu sync.Mutex
	live   map[string]liveNode
	// departed holds the members that left the live set, and when: protoactor
	// blocks their IDs for good, so if memberlist readmits one (it refuted
	// its death) the member must be told to restart. Entries expire after
	// departedTTL.
	departed map[string]time.Time

	badMetaOnce sync.Once
	// lastIgnored is the side of the last eviction notice ignored, so each
	// is logged once.
	lastIgnored atomic.Pointer[string]
	obeyedOnce  sync.Once

	// verify, if set, proves that a peer's remote passes this member's
	// mutual TLS (Security.TLS); a peer enters the topology, and so gets
	// grains, only once it did. Guarded by liveMu, like live.
	verify func(address string) error
	trust  map[string]*peerTrust
	// refusedBySeed is set while a reachable seed refuses this member.
	refusedBySeed atomic.Bool
}

// peerTrust is what the provider knows of one peer's mutual TLS.
type peerTrust struct {
	passed   bool
	checking bool
	failedAt time.Time // last failure; the next check waits retryTrust
	logged   bool      // the refusal was logged (once per peer)
}

// retryTrust is how long after a failed check a peer's remote is checked
// again: it may have been starting, or its files are being fixed.
const retryTrust = time.Second

// PeerRefusedMsg is the message of the WARN line logged when a peer's
// remote fails this member's mutual TLS: the peer stays out of the
// topology and gets no grains.
const PeerRefusedMsg = "cluster: peer refused: its remote did not pass mutual TLS; it gets no grains"

var _ pcluster.ClusterProvider = (*provider)(nil)

func newProvider(mlConfig *memberlist.Config, seeds []string, republish, leaveWait time.Duration, log *slog.Logger,
	published, evicted func(),
) *provider {
	return &provider{
		published: published,
		evicted:   evicted,
		departed:  map[string]time.Time{},
		mlConfig:  mlConfig,
		seeds:     seeds,
		republish: republish,
		leaveWait: leaveWait,
		log:       log,
		poke:      make(chan struct{}, 1),
		bump:      make(chan struct{}, 1),
		joined:    make(chan struct{}),
		live:      map[string]liveNode{},
		trust:     map[string]*peerTrust{},
		stop:      make(chan struct{}),
		loopDone:  make(chan struct{}),
	}
}

// StartMember implements pcluster.ClusterProvider. protoactor calls it once
// the remote is listening, so the member address is final.
func (p *provider) StartMember(c *pcluster.Cluster) error {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return fmt.Errorf("member address %q: %w", c.ActorSystem.Address(), err)
	}
	kinds := c.GetClusterKinds()
	slices.Sort(kinds)
	self := &pcluster.Member{Id: c.ActorSystem.ID, Host: host, Port: int32(port), Kinds: kinds}
	meta, err := proto.Marshal(self)
	if err != nil {
		return fmt.Errorf("encode member meta: %w", err)
	}
	if len(meta) > memberlist.MetaMaxSize {
		return fmt.Errorf("member meta is %d bytes, limit %d (too many or too long kind names)", len(meta), memberlist.MetaMaxSize)
	}
	p.c, p.meta = c, meta

	cfg := p.mlConfig
	// A fresh name per process start lets a restarted member rejoin: an ID
	// that once left is blocked by protoactor forever.
	cfg.Name = c.ActorSystem.ID
	cfg.Label = c.Config.Name
	cfg.Delegate = metaDelegate{p}
	cfg.Events = eventDelegate{p}
	ml, err := memberlist.Create(cfg)
	if err != nil {
		return fmt.Errorf("start memberlist on %s:%d: %w", cfg.BindAddr, cfg.BindPort, err)
	}
	p.ml = ml
	// LocalNode points into memberlist's live state: read it once, before
	// any peer can make memberlist update it.
	p.gossipAddr = ml.LocalNode().Address()
	p.log.Info("cluster member started", slog.String("member", self.Id), slog.String("address", self.Address()),
		slog.String("gossip", p.gossipAddr), slog.Any("kinds", kinds))

	go p.publishLoop()
	go p.joinLoop()
	go p.bumpLoop()
	p.kick()
	return nil
}

// StartClient implements pcluster.ClusterProvider; it is never used.
func (p *provider) StartClient(*pcluster.Cluster) error {
	return errClientMode
}

// Shutdown implements pcluster.ClusterProvider. It is idempotent; graceful
// leaves the membership first so peers drop this member at once instead of
// detecting its failure.
func (p *provider) Shutdown(graceful bool) error {
	var leaveErr error
	if graceful {
		leaveErr = p.leave(p.leaveWait)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shutdown || p.ml == nil {
		return leaveErr
	}
	p.shutdown = true
	p.stopLoops()
	if err := p.ml.Shutdown(); err != nil {
		return fmt.Errorf("cluster: shut down memberlist: %w", err)
	}
	return leaveErr
}

// leave stops publishing and broadcasts this member's departure, waiting at
// most timeout for it to reach a peer. Idempotent; a no-op after Shutdown.
func (p *provider) leave(timeout time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.left || p.shutdown || p.ml == nil {
		return nil
	}
	p.left = true
	// Stop first: after Leave, memberlist no longer lists this member, and
	// publishing that would make protoactor block its own ID.
	p.stopLoops()
	if err := p.ml.Leave(timeout); err != nil {
		return fmt.Errorf("cluster: leave membership: %w", err)
	}
	return nil
}

// stopLoops stops the publish and join loops and waits for the publish loop,
// so no topology update runs after it returns.
func (p *provider) stopLoops() {
	p.stopOnce.Do(func() {
		close(p.stop)
		<-p.loopDone
	})
}

// kick asks the publish loop for a publish without ever blocking.
func (p *provider) kick() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

func (p *provider) publishLoop() {
	defer close(p.loopDone)
	tick := time.NewTicker(p.republish)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.poke:
		case <-tick.C:
		}
		p.publish()
	}
}

// publish hands memberlist's live set to protoactor. Repeating an unchanged
// set is cheap (protoactor compares member IDs and returns), and it applies
// blocks protoactor's gossip added meanwhile.
func (p *provider) publish() {
	p.liveMu.Lock()
	members := make(pcluster.Members, 0, len(p.live))
	var revenants []memberlist.Address
	for name, ln := range p.live {
		if _, gone := p.departed[name]; gone {
			revenants = append(revenants, memberlist.Address{Addr: ln.addr, Name: name})
			continue
		}
		m := new(pcluster.Member)
		if err := proto.Unmarshal(ln.meta, m); err != nil || m.Id != name {
			p.badMetaOnce.Do(func() {
				p.log.Warn("cluster: ignoring gossip node with foreign metadata (another program on the same label?)",
					slog.String("node", name))
			})
			continue
		}
		if !p.trusted(m) {
			continue
		}
		members = append(members, m)
	}
	now := time.Now()
	for name, at := range p.departed {
		if now.Sub(at) > departedTTL {
			delete(p.departed, name)
		}
	}
	var notice []byte
	if len(revenants) > 0 {
		notice = evictionNotice(p.mlConfig.Name, p.sideLocked())
	}
	p.liveMu.Unlock()
	p.c.MemberList.UpdateClusterTopology(members)
	for _, a := range revenants {
		// Best effort over UDP; repeated on every publish while it stays.
		if err := p.ml.SendToAddress(a, notice); err != nil {
			p.log.Debug("cluster: eviction notice not sent", slog.String("node", a.Name), slog.Any("error", err))
		}
	}
	if p.published != nil {
		p.published()
	}
}

// trusted reports whether m may enter the topology: itself, any peer
// without Security.TLS, else a peer whose remote passed mutual TLS. A peer
// not checked yet is checked in the background (the publish that follows
// admits it). Called with liveMu held.
func (p *provider) trusted(m *pcluster.Member) bool {
	if p.verify == nil || m.Id == p.c.ActorSystem.ID {
		return true
	}
	tr := p.trust[m.Id]
	if tr == nil {
		tr = &peerTrust{}
		p.trust[m.Id] = tr
	}
	if tr.passed || tr.checking || time.Since(tr.failedAt) < retryTrust {
		return tr.passed
	}
	tr.checking = true
	go func(id, addr string) {
		err := p.verify(addr)
		p.liveMu.Lock()
		tr.checking = false
		if err == nil {
			tr.passed = true
		} else {
			tr.failedAt = time.Now()
		}
		logRefusal := err != nil && !tr.logged
		tr.logged = tr.logged || logRefusal
		p.liveMu.Unlock()
		switch {
		case err == nil:
			p.log.Info("cluster: peer passed mutual TLS", slog.String("peer", id), slog.String("address", addr))
			p.kick()
		case logRefusal:
			p.log.Warn(PeerRefusedMsg, slog.String("peer", id), slog.String("address", addr), slog.Any("err", err))
		}
	}(m.Id, m.Address())
	return false
}

// joinLoop joins the seeds, retrying with backoff while none answers, and
// later rejoins whenever this member finds itself alone (all peers were
// declared dead, e.g. after a partition), which memberlist never does itself.
func (p *provider) joinLoop() {
	seeds := p.otherSeeds()
	if len(seeds) == 0 {
		close(p.joined)
		return
	}
	const minWait, maxWait = 200 * time.Millisecond, 5 * time.Second
	wait := minWait
	joined := false
	for {
		if !joined || p.ml.NumMembers() <= 1 {
			n, err := p.ml.Join(seeds)
			switch {
			case n > 0:
				if !joined {
					p.log.Info("cluster: joined", slog.Int("seeds_contacted", n))
					close(p.joined)
				}
				joined, wait = true, minWait
			case joined:
				p.log.Warn("cluster: alone and cannot rejoin any seed", slog.Any("error", err))
			case anyReachable(seeds):
				// A seed is there but did not take this member: another
				// gossip key or cluster name. Until a join succeeds this
				// member must not act as if it were the whole cluster.
				if p.refusedBySeed.CompareAndSwap(false, true) {
					p.log.Error(SeedRefusedMsg, slog.Any("seeds", seeds), slog.Any("error", err))
				}
			default:
				p.log.Info("cluster: no seed answered yet; retrying", slog.Any("seeds", seeds), slog.Any("error", err))
			}
			if n > 0 {
				p.refusedBySeed.Store(false)
			}
		}
		d := wait/2 + rand.N(wait/2+1)
		if !joined {
			wait = min(2*wait, maxWait)
		} else {
			d = maxWait
		}
		select {
		case <-p.stop:
			return
		case <-time.After(d):
		}
	}
}

// SeedRefusedMsg is the message of the ERROR line logged when a seed is
// reachable but its memberlist does not take this member.
const SeedRefusedMsg = "cluster: a seed is reachable but refused this member (another gossip key or cluster name?); serving nothing until a join succeeds"

// anyReachable reports whether a TCP connection to any seed succeeds: the
// difference between a cluster that is not there yet (this member may be
// its first) and one that refuses this member.
func anyReachable(seeds []string) bool {
	for _, s := range seeds {
		c, err := net.DialTimeout("tcp", s, time.Second)
		if err == nil {
			_ = c.Close() // a probe only
			return true
		}
	}
	return false
}

// admitted returns why this member is not part of its cluster, or nil: a
// seed refused it and no join succeeded since. (Peers that fail this
// member's mutual TLS do not count: anyone with the gossip key alone could
// otherwise take a member out of service.)
func (p *provider) admitted() error {
	if p.refusedBySeed.Load() {
		return fmt.Errorf("%w: a reachable seed refused it (another gossip key or cluster name?)", ErrNotAdmitted)
	}
	return nil
}

// otherSeeds drops this member's own gossip address from the seeds, so a
// configuration that lists every member can be shared by all of them.
func (p *provider) otherSeeds() []string {
	bound := net.JoinHostPort(p.mlConfig.BindAddr, strconv.Itoa(p.mlConfig.BindPort))
	out := make([]string, 0, len(p.seeds))
	for _, s := range p.seeds {
		if s == p.gossipAddr || s == bound {
			continue
		}
		out = append(out, s)
	}
	return out
}

// Eviction notices. A member tells each revenant (a member it declared
// dead that memberlist readmitted) that it was evicted: protoactor blocked
// the revenant's ID here for good, so it must restart (Node.Evicted).
//
// After a partition heals, both sides are revenants to each other, and each
// side's protoactor blocked the other's IDs; one side must restart, and it
// should be the smaller one, or a single cut-off member restarts the whole
// majority. The notice therefore names its sender and the sender's side:
// the members the sender has in its view and did not declare dead, itself
// included. A receiver that never declared the sender dead obeys (it
// stalled, or only the sender lost it: it is the one that went missing). A
// receiver that declared the sender dead too compares sides (yields): the
// side with more members wins, on a tie the one holding the smallest
// member ID, and when both hold the same smallest ID neither wins and
// both restart. Between any two members that declared each other dead,
// then, at least one yields to the other; in a clean partition the sides
// share no member and the smaller one restarts. (Sides can share members
// when views differ, e.g. when a member was restarted just before the
// cut: each side then counts it.)
//
// The notice is evictedNotice, then one line with the sender's name and
// one per member of its side. A notice without lines (a member of an older
// version) is obeyed.
var evictedNotice = []byte("matchgrain/cluster: evicted")

// maxNoticeSide bounds the member names a received notice may carry; a
// cluster larger than this is far beyond what one notice's datagram holds
// anyway.
const maxNoticeSide = 1000

// evictionNotice encodes a notice from sender naming its side.
func evictionNotice(sender string, side []string) []byte {
	b := bytes.Clone(evictedNotice)
	for _, name := range append([]string{sender}, side...) {
		b = append(b, '\n')
		b = append(b, name...)
	}
	return b
}

// parseNotice decodes an eviction notice: ok is false for any other
// message; sender is "" and side nil for a notice of an older member.
func parseNotice(msg []byte) (sender string, side []string, ok bool) {
	rest, found := bytes.CutPrefix(msg, evictedNotice)
	if !found || (len(rest) > 0 && rest[0] != '\n') {
		return "", nil, false
	}
	if len(rest) == 0 {
		return "", nil, true
	}
	names := bytes.Split(rest[1:], []byte{'\n'})
	sender = string(names[0])
	side = []string{}
	for _, name := range names[1:] {
		if len(side) == maxNoticeSide {
			break
		}
		side = append(side, string(name))
	}
	return sender, side, true
}

// sideLocked returns this member's side, sorted: every member in its view
// it did not declare dead, itself included. Called with liveMu held.
func (p *provider) sideLocked() []string {
	side := make([]string, 0, len(p.live))
	for name := range p.live {
		if _, gone := p.departed[name]; !gone {
			side = append(side, name)
		}
	}
	slices.Sort(side)
	return side
}

// obeys reports whether this member yields to an eviction notice from
// sender, whose side is other ("" and nil: an older member), and returns
// this member's side.
func (p *provider) obeys(sender string, other []string) (mine []string, ok bool) {
	p.liveMu.Lock()
	mine = p.sideLocked()
	_, declared := p.departed[sender]
	p.liveMu.Unlock()
	return mine, !declared || yields(mine, other)
}

// yields reports whether the side mine must restart when a member of side
// other, which this side declared dead as it declared this side dead, says
// so: unless mine has more members, or as many and the smallest ID that
// the other lacks (see the comment on evictedNotice).
func yields(mine, other []string) bool {
	if len(mine) != len(other) {
		return len(other) > len(mine)
	}
	return len(mine) == 0 || slices.Min(mine) >= slices.Min(other)
}

// IgnoredEvictionMsg is the message of the WARN line logged when this
// member ignores an eviction notice from the smaller side of a partition.
const IgnoredEvictionMsg = "cluster: ignoring an eviction notice from the smaller side of a healed partition; that side restarts"

// departedTTL bounds how long a departed member is remembered; memberlist
// forgets dead nodes well before (GossipToTheDeadTime, DeadNodeReclaimTime).
const departedTTL = time.Hour

// liveNode is what the provider keeps of a live memberlist node.
type liveNode struct {
	meta []byte
	addr string // gossip "ip:port"
}

// metaDelegate implements memberlist.Delegate: NodeMeta carries the member,
// NotifyMsg the eviction notice.
type metaDelegate struct{ p *provider }

// NodeMeta returns the encoded pcluster.Member; it never changes for the
// lifetime of a member ID (protoactor compares members by ID only).
func (d metaDelegate) NodeMeta(int) []byte { return d.p.meta }

// NotifyMsg receives user messages; memberlist may reuse msg after return.
func (d metaDelegate) NotifyMsg(msg []byte) {
	sender, side, ok := parseNotice(msg)
	if !ok || d.p.evicted == nil {
		return
	}
	if mine, ok := d.p.obeys(sender, side); ok {
		// Notices repeat every republish tick: log the first.
		d.p.obeyedOnce.Do(func() {
			d.p.log.Warn("cluster: eviction notice obeyed", slog.String("sender", sender), slog.Any("their_side", side), slog.Any("my_side", mine))
		})
		d.p.evicted()
		return
	}
	// Notices repeat every republish tick: log each side once.
	key := strings.Join(side, ",")
	if prev := d.p.lastIgnored.Swap(&key); prev == nil || *prev != key {
		d.p.log.Warn(IgnoredEvictionMsg, slog.String("sender", sender), slog.Any("their_side", side))
	}
}

func (metaDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (metaDelegate) LocalState(join bool) []byte                { return nil }
func (metaDelegate) MergeRemoteState(buf []byte, join bool)     {}

// eventDelegate implements memberlist.EventDelegate. memberlist calls it with
// its node lock held, so it only records the change and pokes the publish
// loop.
type eventDelegate struct{ p *provider }

func (d eventDelegate) NotifyJoin(n *memberlist.Node)   { d.p.setLive(n, true) }
func (d eventDelegate) NotifyUpdate(n *memberlist.Node) { d.p.setLive(n, true) }
func (d eventDelegate) NotifyLeave(n *memberlist.Node)  { d.p.setLive(n, false) }

func (p *provider) setLive(n *memberlist.Node, alive bool) {
	p.liveMu.Lock()
	if alive {
		p.live[n.Name] = liveNode{meta: bytes.Clone(n.Meta), addr: n.Address()}
	} else {
		delete(p.live, n.Name)
		delete(p.trust, n.Name)
		if n.Name != p.mlConfig.Name {
			p.departed[n.Name] = time.Now()
			select {
			case p.bump <- struct{}{}:
			default:
			}
		}
	}
	p.liveMu.Unlock()
	p.kick()
}

// bumpLoop raises this member's incarnation whenever it saw a peer declared
// dead. A partition's two sides declare each other dead; after the heal,
// the cut-off side's gossip still carries those verdicts (dead and suspect
// messages, push/pull state), and memberlist accepts a verdict on a member
// unless it names an older incarnation than the one it knows. Without the
// bump, a member of the majority would apply the cut-off side's verdict on
// another member of the majority, protoactor would block that member's ID
// for good, and one of the two would have to restart. With it, every
// member that took part in declaring the cut-off side dead has told its
// own side a newer incarnation, so verdicts formed across the partition
// are ignored there. (A member that really died cannot refute, so nothing
// is delayed: the bump costs one alive broadcast per departure.)
func (p *provider) bumpLoop() {
	for {
		select {
		case <-p.stop:
			return
		case <-p.bump:
		}
		// Never after a leave: an alive message with a newer incarnation
		// would undo it on the peers. UpdateNode raises the incarnation and
		// queues its broadcast at once, then waits for the broadcast to go
		// out; a timeout only ends that wait, kept short so as not to hold
		// up a leave.
		p.mu.Lock()
		if !p.left && !p.shutdown {
			_ = p.ml.UpdateNode(time.Millisecond) // only "timeout waiting for update broadcast"
		}
		p.mu.Unlock()
	}
}
