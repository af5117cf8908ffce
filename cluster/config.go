package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/hashicorp/memberlist"
)

// ErrInvalidConfig is wrapped by every error Start returns for a bad Config.
var ErrInvalidConfig = errors.New("cluster: invalid config")

// Defaults applied by Start to zero-valued Config fields.
const (
	DefaultRequestTimeout    = 5 * time.Second
	DefaultRetryInitial      = 20 * time.Millisecond
	DefaultRetryMax          = time.Second
	DefaultTopologyRepublish = time.Second
	DefaultLeaveTimeout      = 2 * time.Second
	defaultNodeName          = "member"
	remoteMaxRetryCount      = 2 // docs/cluster.md §5.3: writers stuck on dead peers must not stall shutdown
	// endpointWriterQueueSize is the initial capacity of the queue of
	// messages to one peer (protoactor's ring grows by doubling). Its
	// default, 1,000,000, made 16 MB of pointer slots per peer, for the
	// collector to scan at every cycle, and a send to a dead peer's
	// address allocated them again under protoactor's endpoint lock while
	// every grain pushing to that peer waited (docs/cluster.md §5.1).
	endpointWriterQueueSize = 1024
	// remoteWindowSize is the HTTP/2 flow-control window of every stream
	// and connection between members, set explicitly so that gRPC turns
	// its dynamic window off: with it on, each data frame that arrived
	// while no bandwidth probe was out sent one (a window update and a
	// PING for the sender to answer), so a quiet link between members
	// paid a probe round trip, four more system calls, for nearly every
	// batch of messages (docs/cluster.md §5.1). 1 MiB bounds what a peer
	// may have in flight toward this member unread.
	remoteWindowSize       = 1 << 20
	minHeartbeatExpiration = time.Minute
)

// Config describes one cluster member. Only ClusterName, GossipAddr and
// RemoteAddr are required; every zero duration takes the default named on it.
type Config struct {
	// NodeName labels this member in logs. It is not its identity: the member
	// ID is the actor system ID, fresh on every Start, so a restarted process
	// is a new member. Default "member".
	NodeName string
	// GossipAddr is the "ip:port" memberlist binds for UDP and TCP. Port 0
	// picks a free port (see Node.GossipAddr). Required.
	GossipAddr string
	// AdvertiseGossipAddr is the "ip:port" peers use to reach GossipAddr, when
	// it differs (NAT, 0.0.0.0 bind). Optional.
	AdvertiseGossipAddr string
	// Join lists seed gossip addresses ("host:port"). Unreachable seeds are
	// retried in the background, so the first member may start alone.
	Join []string
	// RemoteAddr is the "host:port" protoactor remote listens on; port 0 picks
	// a free port. Unless AdvertiseRemoteAddr is set, the bound address is the
	// member address every peer hashes and dials, so the host must be an
	// address peers can reach (not 0.0.0.0). Required.
	RemoteAddr string
	// AdvertiseRemoteAddr is the full "host:port" peers dial for this member's
	// actors, when it differs from RemoteAddr. Optional.
	AdvertiseRemoteAddr string
	// ClusterName isolates clusters that share a network: it becomes the
	// memberlist label, so members with another name are never seen. Required,
	// at most 255 bytes.
	ClusterName string
	// Kinds are the grain kinds this member hosts. Empty makes an edge-only
	// member: a full member that routes requests but hosts no grains.
	Kinds []*pcluster.Kind
	// RequestTimeout bounds one attempt of Node.Request; the caller's context
	// bounds the whole call. Default DefaultRequestTimeout (5 s).
	RequestTimeout time.Duration
	// Retry is the backoff between attempts of Node.Request.
	Retry Backoff
	// TopologyRepublish is how often the full membership is re-published to
	// protoactor even without a memberlist event, so that members blocked by
	// protoactor's own gossip are dropped promptly. Default 1 s.
	TopologyRepublish time.Duration
	// LeaveTimeout bounds how long a graceful leave waits for the leave
	// broadcast to reach a peer. Default 2 s.
	LeaveTimeout time.Duration
	// FailureDetection tunes memberlist's failure detector, which is the only
	// one: it decides the failover time.
	FailureDetection FailureDetection
	// Security encrypts and authenticates gossip and the remote; a member
	// with a non-loopback address refuses to start without it (see Security).
	Security Security
	// Info is what this member tells a peer that asks (Node.Describe): its
	// versions and build, for an operator's view of the whole cluster.
	// The member's ID is added under InfoMember. Optional.
	Info map[string]string
	// Logger receives this package's logs, memberlist's (at their own level,
	// ERR lines as WARN) and protoactor's (WARN and above only). Default
	// slog.Default().
	Logger *slog.Logger
}

// Backoff is a capped exponential backoff with full jitter: the wait before
// retry n (from 0) is uniform in [0, min(Max, Initial·2ⁿ)].
type Backoff struct {
	// Initial is the cap of the first wait. Default 20 ms.
	Initial time.Duration
	// Max caps every wait. Default 1 s.
	Max time.Duration
}

// FailureDetection holds memberlist's SWIM knobs. Zero fields take the
// DefaultFailureDetection value.
//
// A crashed member leaves the topology after roughly
//
//	time until a peer probes it (about ProbeInterval)
//	+ one failed probe round (ProbeInterval)
//	+ the suspicion timeout
//
// The suspicion timeout starts at SuspicionMaxTimeoutMult·base and falls to
// base = SuspicionMult·max(1, log10 N)·ProbeInterval as other members confirm
// the suspicion independently (memberlist's Lifeguard); memberlist expects
// SuspicionMult−2 confirmations, or none when fewer peers exist. The defaults
// (SuspicionMult 3: one confirmation) put a crash at about 2 s on a LAN,
// measured 1.8–2.6 s kill→answer on loopback, because every survivor soon
// suspects a dead member; a member suspected by one slow or partitioned
// observer only gets the long timeout (about 3.6 s) to refute.
//
// The trade-off is false suspicion: a member that cannot answer probes for
// longer than the timeout (a long GC or CPU stall, a saturated link, or peers
// that are themselves starved) is declared dead although alive, and
// protoactor then blocks its ID for good (docs/cluster.md §1.1), so it must
// restart (Node.Evicted). Raise ProbeInterval and SuspicionMult together on
// noisy networks or overloaded hosts; failover time grows linearly with both.
// Setting SuspicionMult above 3 makes clusters of 3 members or fewer decide
// without confirmation (memberlist needs SuspicionMult−2 peers to confirm),
// which is faster to fool.
type FailureDetection struct {
	// ProbeInterval is the time between probes of one random peer. Default 400 ms
	// (memberlist LAN default 1 s).
	ProbeInterval time.Duration
	// ProbeTimeout is how long a direct probe waits for its ack before
	// indirect probes start; must be shorter than ProbeInterval. Default
	// 200 ms, ample on a LAN (memberlist LAN default 500 ms).
	ProbeTimeout time.Duration
	// SuspicionMult scales the base suspicion timeout and sets how many
	// confirmations memberlist expects (SuspicionMult−2; see above). Default 3.
	SuspicionMult int
	// SuspicionMaxTimeoutMult is the suspicion timeout while confirmations
	// are missing, as a multiple of the base timeout. Default 3: with 6, a
	// kill whose confirmation gossip was slow took up to 7.6 s to fail over
	// (1 in 20 kills); with 3 the worst of 20 was 4.9 s (docs/performance.md).
	SuspicionMaxTimeoutMult int
	// GossipInterval is the time between gossip rounds that spread state
	// changes (suspect, dead, left, join). Default 100 ms.
	GossipInterval time.Duration
	// RetransmitMult: each broadcast is retransmitted
	// RetransmitMult·ceil(log10(N+1)) times. Default 4.
	RetransmitMult int
	// PushPullInterval is the time between full state syncs with a random
	// peer; it heals missed gossip. Default 15 s.
	PushPullInterval time.Duration
	// TCPTimeout bounds TCP connects and reads (push/pull, joins, fallback
	// pings). Default 2 s.
	TCPTimeout time.Duration
	// IgnoreClosedConnections turns off the closed-connection hint
	// (cluster/hint.go): a peer whose connection closed and whose ports
	// refuse connections is then declared dead by the probes only. For
	// networks whose firewalls answer a cut with refusals (REJECT rules)
	// rather than silence: there a partitioned peer would look dead at
	// once instead of after the suspicion timeout. Default false.
	IgnoreClosedConnections bool
}

// DefaultFailureDetection returns the LAN defaults documented on
// FailureDetection's fields.
func DefaultFailureDetection() FailureDetection {
	return FailureDetection{
		ProbeInterval:           400 * time.Millisecond,
		ProbeTimeout:            200 * time.Millisecond,
		SuspicionMult:           3,
		SuspicionMaxTimeoutMult: 3,
		GossipInterval:          100 * time.Millisecond,
		RetransmitMult:          4,
		PushPullInterval:        15 * time.Second,
		TCPTimeout:              2 * time.Second,
	}
}

func (fd FailureDetection) withDefaults() FailureDetection {
	d := DefaultFailureDetection()
	if fd.ProbeInterval == 0 {
		fd.ProbeInterval = d.ProbeInterval
	}
	if fd.ProbeTimeout == 0 {
		fd.ProbeTimeout = d.ProbeTimeout
	}
	if fd.SuspicionMult == 0 {
		fd.SuspicionMult = d.SuspicionMult
	}
	if fd.SuspicionMaxTimeoutMult == 0 {
		fd.SuspicionMaxTimeoutMult = d.SuspicionMaxTimeoutMult
	}
	if fd.GossipInterval == 0 {
		fd.GossipInterval = d.GossipInterval
	}
	if fd.RetransmitMult == 0 {
		fd.RetransmitMult = d.RetransmitMult
	}
	if fd.PushPullInterval == 0 {
		fd.PushPullInterval = d.PushPullInterval
	}
	if fd.TCPTimeout == 0 {
		fd.TCPTimeout = d.TCPTimeout
	}
	return fd
}

func (fd FailureDetection) validate() error {
	durations := []struct {
		name string
		v    time.Duration
	}{
		{"ProbeInterval", fd.ProbeInterval},
		{"ProbeTimeout", fd.ProbeTimeout},
		{"GossipInterval", fd.GossipInterval},
		{"PushPullInterval", fd.PushPullInterval},
		{"TCPTimeout", fd.TCPTimeout},
	}
	for _, d := range durations {
		if d.v < 0 {
			return fmt.Errorf("%w: FailureDetection.%s must be positive, got %v", ErrInvalidConfig, d.name, d.v)
		}
	}
	mults := []struct {
		name string
		v    int
	}{
		{"SuspicionMult", fd.SuspicionMult},
		{"SuspicionMaxTimeoutMult", fd.SuspicionMaxTimeoutMult},
		{"RetransmitMult", fd.RetransmitMult},
	}
	for _, m := range mults {
		if m.v < 0 {
			return fmt.Errorf("%w: FailureDetection.%s must be positive, got %d", ErrInvalidConfig, m.name, m.v)
		}
	}
	if fd.ProbeTimeout >= fd.ProbeInterval {
		return fmt.Errorf("%w: FailureDetection.ProbeTimeout (%v) must be shorter than ProbeInterval (%v)",
			ErrInvalidConfig, fd.ProbeTimeout, fd.ProbeInterval)
	}
	return nil
}

// CrashDetection bounds how long memberlist takes to declare a crashed
// member dead in a cluster of up to 10 members, for fd with defaults applied:
// two probe rounds until some survivor has probed it and failed, then the
// suspicion timeout at its ceiling (no confirmation arrived),
//
//	2·ProbeInterval + SuspicionMaxTimeoutMult·SuspicionMult·ProbeInterval
//
// 4.4 s with the defaults, 22 s with a 2 s probe interval. Callers that wait
// for a match through a failover (the edge's player calls) must be more
// patient than this plus the new owner's activation. Larger clusters scale
// the suspicion by log10 of their size.
func (fd FailureDetection) CrashDetection() time.Duration {
	fd = fd.withDefaults()
	return 2*fd.ProbeInterval + time.Duration(fd.SuspicionMaxTimeoutMult*fd.SuspicionMult)*fd.ProbeInterval
}

// earliestDeath is the shortest silence after which peers can declare a
// member dead: a probe of it fails at the end of one probe interval (the
// ack channel times out then; indirect probes run inside it), and the
// suspicion then lasts at least SuspicionMult probe intervals (memberlist's
// minimum, reached once enough peers confirm; its node-count scale is 1
// below 10 members and only lengthens it above).
func (fd FailureDetection) earliestDeath() time.Duration {
	return time.Duration(1+fd.SuspicionMult) * fd.ProbeInterval
}

// stallThreshold is the stall after which a member quarantines itself
// (cluster/stall.go): three quarters of earliestDeath, so that every stall
// that can get it declared dead exceeds the threshold with a margin for
// timer and scheduling slack, while stalls too short for any peer to act on
// cost nothing. 1.2 s with the defaults, 3 s with 1 s probes.
func (fd FailureDetection) stallThreshold() time.Duration {
	return fd.earliestDeath() * 3 / 4
}

// StallThreshold is the stall after which a member with these settings
// stops reclaiming and activating for a while (Node.Unsettled).
func (fd FailureDetection) StallThreshold() time.Duration {
	return fd.withDefaults().stallThreshold()
}

// worstDetection is a generous bound on the time memberlist needs to declare
// a crashed member dead in a cluster of up to 1000 members.
func (fd FailureDetection) worstDetection() time.Duration {
	const scale = 3 // log10(1000)
	suspicion := time.Duration(fd.SuspicionMult*fd.SuspicionMaxTimeoutMult*scale) * fd.ProbeInterval
	return 4*fd.ProbeInterval + suspicion
}

// heartbeatExpiration keeps protoactor's gossip heartbeat check far behind
// memberlist, so memberlist stays the single failure detector (a heartbeat
// expiry blocks a member forever, docs/cluster.md §1.3).
func (fd FailureDetection) heartbeatExpiration() time.Duration {
	return max(minHeartbeatExpiration, 4*fd.worstDetection())
}

// apply copies the knobs onto a memberlist config.
func (fd FailureDetection) apply(c *memberlist.Config) {
	c.ProbeInterval = fd.ProbeInterval
	c.ProbeTimeout = fd.ProbeTimeout
	c.SuspicionMult = fd.SuspicionMult
	c.SuspicionMaxTimeoutMult = fd.SuspicionMaxTimeoutMult
	c.GossipInterval = fd.GossipInterval
	c.RetransmitMult = fd.RetransmitMult
	c.PushPullInterval = fd.PushPullInterval
	c.TCPTimeout = fd.TCPTimeout
	// Keep gossiping to a dead member as long as a push/pull round takes, so
	// a falsely-declared member learns of it and refutes (memberlist's LAN
	// and local configs tie the two the same way).
	c.GossipToTheDeadTime = fd.PushPullInterval
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.NodeName == "" {
		c.NodeName = defaultNodeName
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Retry.Initial == 0 {
		c.Retry.Initial = DefaultRetryInitial
	}
	if c.Retry.Max == 0 {
		c.Retry.Max = DefaultRetryMax
	}
	if c.TopologyRepublish == 0 {
		c.TopologyRepublish = DefaultTopologyRepublish
	}
	if c.LeaveTimeout == 0 {
		c.LeaveTimeout = DefaultLeaveTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Security.ReloadInterval == 0 {
		c.Security.ReloadInterval = DefaultSecretsReload
	}
	c.FailureDetection = c.FailureDetection.withDefaults()
	return c
}

// Validate reports the first problem with c after defaults are applied, as an
// error wrapping ErrInvalidConfig. Start calls it.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.ClusterName == "" {
		return fmt.Errorf("%w: ClusterName is required", ErrInvalidConfig)
	}
	if len(c.ClusterName) > memberlist.LabelMaxSize {
		return fmt.Errorf("%w: ClusterName is %d bytes, limit %d", ErrInvalidConfig, len(c.ClusterName), memberlist.LabelMaxSize)
	}
	if c.GossipAddr == "" {
		return fmt.Errorf("%w: GossipAddr is required", ErrInvalidConfig)
	}
	if _, _, err := splitIPPort("GossipAddr", c.GossipAddr, true); err != nil {
		return err
	}
	if c.AdvertiseGossipAddr != "" {
		if _, _, err := splitIPPort("AdvertiseGossipAddr", c.AdvertiseGossipAddr, false); err != nil {
			return err
		}
	}
	for i, seed := range c.Join {
		if _, _, err := splitHostPort(fmt.Sprintf("Join[%d]", i), seed, false); err != nil {
			return err
		}
	}
	if c.RemoteAddr == "" {
		return fmt.Errorf("%w: RemoteAddr is required", ErrInvalidConfig)
	}
	host, _, err := splitHostPort("RemoteAddr", c.RemoteAddr, true)
	if err != nil {
		return err
	}
	if c.AdvertiseRemoteAddr != "" {
		if _, _, err := splitHostPort("AdvertiseRemoteAddr", c.AdvertiseRemoteAddr, false); err != nil {
			return err
		}
	} else if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("%w: RemoteAddr %q binds all interfaces: set AdvertiseRemoteAddr to the address peers dial",
			ErrInvalidConfig, c.RemoteAddr)
	}
	seen := map[string]bool{}
	for i, k := range c.Kinds {
		if k == nil || k.Kind == "" || k.Props == nil {
			return fmt.Errorf("%w: Kinds[%d] is nil or has no name or props", ErrInvalidConfig, i)
		}
		if seen[k.Kind] {
			return fmt.Errorf("%w: kind %q listed twice", ErrInvalidConfig, k.Kind)
		}
		seen[k.Kind] = true
	}
	durations := []struct {
		name string
		v    time.Duration
	}{
		{"RequestTimeout", c.RequestTimeout},
		{"Retry.Initial", c.Retry.Initial},
		{"Retry.Max", c.Retry.Max},
		{"TopologyRepublish", c.TopologyRepublish},
		{"LeaveTimeout", c.LeaveTimeout},
	}
	for _, d := range durations {
		if d.v < 0 {
			return fmt.Errorf("%w: %s must be positive, got %v", ErrInvalidConfig, d.name, d.v)
		}
	}
	if c.Retry.Initial > c.Retry.Max {
		return fmt.Errorf("%w: Retry.Initial (%v) must not exceed Retry.Max (%v)", ErrInvalidConfig, c.Retry.Initial, c.Retry.Max)
	}
	if err := c.FailureDetection.validate(); err != nil {
		return err
	}
	if err := c.Security.validate(); err != nil {
		return err
	}
	return c.checkExposure()
}

// splitHostPort parses "host:port"; port 0 is accepted only when zeroOK.
func splitHostPort(field, addr string, zeroOK bool) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %s %q is not host:port: %v", ErrInvalidConfig, field, addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > math.MaxUint16 || (port == 0 && !zeroOK) {
		return "", 0, fmt.Errorf("%w: %s %q has an invalid port", ErrInvalidConfig, field, addr)
	}
	return host, port, nil
}

// splitIPPort is splitHostPort for memberlist, which binds and advertises IP
// literals only.
func splitIPPort(field, addr string, zeroOK bool) (string, int, error) {
	host, port, err := splitHostPort(field, addr, zeroOK)
	if err != nil {
		return "", 0, err
	}
	if net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("%w: %s %q must use an IP address, not a name", ErrInvalidConfig, field, addr)
	}
	return host, port, nil
}
