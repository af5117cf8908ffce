// Package config is matchd's flag table: every setting of a node, its flag,
// its MATCHD_* environment variable, its default and its checks, parsed
// into the configuration of the packages that own it (the cluster member's,
// the edge's, the grains' timing) so that the command only wires them.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/persistence"
)

// DefaultGCBusyPercent is the collector's GOGC while the node is busy: 40
// instead of Go's 100 keeps about a third less resident memory per running
// match, with node CPU per intent within the run-to-run spread at a human
// pace (docs/performance.md §2). The collector's CPU grows as 100/GOGC; a
// node short of CPU rather than memory sets 100.
const DefaultGCBusyPercent = 40

// DefaultGCHerdPercent is GOGC for a while after another member left or
// died: taking over a dead member's 1,000-odd matches, the survivors spent
// less CPU per match than at the busy percent and the herd's p99 fell
// (docs/performance.md §3.4); 400 did no better.
const DefaultGCHerdPercent = 200

// Options is every setting of a node, from flags and MATCHD_* variables.
type Options struct {
	// Cluster is the member's configuration from the flags; the node adds
	// what only it has (its grain kinds, logger, member info).
	Cluster cluster.Config
	// Edge is the edge's configuration from the flags (timeouts, limits,
	// origins, public play, previous admin tokens); the node adds its keys,
	// tokens, handlers and registry.
	Edge edge.Config
	// Timing is the match grains' timing, shared with the edge's seats.
	Timing actors.Timing
	// SpectatorDelayEvents and SpectatorDelay hold batches back from
	// spectators (docs/protocol.md §14.5); Edge.MaxSpectators caps them.
	SpectatorDelayEvents int
	SpectatorDelay       time.Duration

	// DatabaseURL selects PostgreSQL (DatabaseSchema its schema); empty
	// means the embedded store under DataDir.
	DatabaseURL, DatabaseSchema, DataDir string
	// DatabaseTCP bounds the wait on a database host gone from the network.
	DatabaseTCP persistence.TCPTimeouts
	// Listen is the HTTP address, TCPListen the TCP fallback's (empty: off),
	// MetricsListen a separate /metrics address and DebugListen the
	// loopback pprof address (empty: off).
	Listen, TCPListen, MetricsListen, DebugListen string
	// AdminToken and TicketKey (hex) are the secrets given on start; empty
	// means shared through the store or kept in DataDir (clusterkeys).
	AdminToken, TicketKey string
	// SecretsRefresh is how often the shared ticket keys are re-read;
	// TicketKeyRotation replaces the shared key when it is this old (0: never).
	SecretsRefresh, TicketKeyRotation time.Duration

	// EdgeOnly makes a member that serves players but hosts no grains.
	EdgeOnly bool
	// StoreTimeout bounds one store call of a grain.
	StoreTimeout time.Duration
	// MaxClockSkew is how far members' clocks may differ before a grain
	// drops a request its sender still waits for (actors.GrainDeps).
	MaxClockSkew time.Duration
	// ReclaimInterval is the reclaimer's period, ReclaimLease how recently
	// another member's write keeps the reclaimer away from a match.
	ReclaimInterval, ReclaimLease time.Duration
	// RetentionAfter prunes finished matches' logs this long after their
	// last write (0: never), every RetentionInterval.
	RetentionAfter, RetentionInterval time.Duration
	// DrainTimeout bounds the graceful stop.
	DrainTimeout time.Duration

	// GCBusyPercent is the collector's GOGC while the node is busy (and
	// always, with the governor off); GCQuietPercent is the GC governor's
	// GOGC for a quiet node (0: off); ProcGovernor turns on the Proc
	// governor. GCMinHeadroom is the least headroom, in bytes past the live
	// heap, the GC governor keeps while busy (0: none). GCHerdPercent is
	// its GOGC for a while after another member left or died (0: off).
	// Setting GOGC in the environment overrides them all.
	GCBusyPercent  int
	GCQuietPercent int
	GCMinHeadroom  uint64
	GCHerdPercent  int
	ProcGovernor   bool

	// JSONLogs and LogLevel shape the logs.
	JSONLogs bool
	LogLevel string
	// Demo plays a bot match against the node after start, DemoDelay
	// between moves; DemoExit stops the node when it is over.
	Demo, DemoExit bool
	DemoDelay      time.Duration
}

// Parse reads args (and the environment) into Options. It returns
// flag.ErrHelp for -h, and names the flag of anything it refuses.
func Parse(args []string) (Options, error) {
	var o Options
	fs := &flagSet{FlagSet: flag.NewFlagSet("matchd", flag.ContinueOnError)}
	def := actors.DefaultTiming()
	nodeName := fs.String("node-name", hostname(), "name of this node in logs")
	gossip := fs.String("gossip-addr", "127.0.0.1:7946", "ip:port memberlist binds for gossip")
	join := fs.String("join", "", "comma-separated gossip addresses of seed members")
	remote := fs.String("remote-addr", "127.0.0.1:8090", "host:port of the actor remote; peers dial it, so not 0.0.0.0")
	advertiseRemote := fs.String("advertise-remote-addr", "", "host:port peers dial for the actor remote when it differs from --remote-addr (which may then be 0.0.0.0): a name this member's cluster TLS certificate holds")
	cname := fs.String("cluster-name", "matchgrain", "cluster name; members of other clusters are ignored")
	dburl := fs.String("database-url", "", "PostgreSQL URL; empty uses the embedded store under --data-dir")
	dbSchema := fs.String("database-schema", "", "PostgreSQL schema for the tables (empty: the connection's search_path)")
	dbUserTimeout := fs.Duration("database-tcp-user-timeout", persistence.DefaultTCPTimeouts.UserTimeout, "TCP_USER_TIMEOUT of the PostgreSQL connections: a statement unacknowledged this long fails, so a database host gone from the network is noticed before store-timeout (0: the system's default, about 15 minutes)")
	dbKeepAlive := fs.Duration("database-keepalive", persistence.DefaultTCPTimeouts.KeepAliveIdle, "idle time before TCP keep-alive probes (1 s apart, 3 of them) on the PostgreSQL connections, so an idle pooled connection to a vanished host is dropped (0: off)")
	dataDir := fs.String("data-dir", "matchgrain-data", "directory of the embedded store")
	listen := fs.String("listen", "127.0.0.1:8080", "HTTP address: /game WebSocket, /api, /healthz, /metrics")
	tcpListen := fs.String("tcp-listen", "", "TCP fallback address (length-prefixed frames); empty disables it")
	admin := fs.String("admin-token", "", "bearer token of the HTTP API; prefer MATCHD_ADMIN_TOKEN over the command line; empty: shared through the database with --database-url, else generated once into DATA-DIR/admin-token (never printed)")
	tkey := fs.String("ticket-key", "", "hex key (>= 32 bytes) that signs tickets; all edges of a cluster need the same key; empty: shared through the database with --database-url, else generated once and kept in --data-dir")
	secretsRefresh := fs.Duration("secrets-refresh", 30*time.Second, "how often a member re-reads the ticket keys shared through the database")
	rotation := fs.Duration("ticket-key-rotation", 0, "replace the shared ticket key when it is this old (0: never); tickets in flight stay valid")
	origins := fs.String("allowed-origins", "", "comma-separated browser origins allowed on /game ('*' for any)")
	edgeOnly := fs.Bool("edge-only", false, "serve players but host no match grains")
	demo := fs.Bool("demo", false, "after start, play a bot match against this node and print it; implies --public-play")
	publicPlay := fs.Bool("public-play", false, "let browsers create bot and friend matches without the admin token (rate limited; see web/README.md)")
	publicCreates := fs.Float64("public-creates-per-minute", edge.DefaultPublicCreatesPerMinute, "public match creations per minute per client address (IPv4 address or IPv6 /64)")
	publicCreatesGlobal := fs.Float64("public-creates-global-per-minute", edge.DefaultPublicCreatesGlobalPerMinute, "public match creations per minute for the whole edge; a quarter is kept for addresses that created nothing in the last 10 minutes")
	demoExit := fs.Bool("demo-exit", false, "with --demo: stop the node when the demo match is over")
	jsonLogs := fs.Bool("json-logs", false, "log JSON instead of text")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	decision := fs.Duration("decision-time", def.DecisionTime, "free time per decision")
	bank := fs.Duration("bank-time", def.BankTime, "each player's time bank for the match")
	absence := fs.Duration("absence-timeout", def.AbsenceTimeout, "a seat without a connection this long loses")
	clock := fs.Duration("clock-interval", def.ClockInterval, "longest gap between ServerClock frames")
	keepAlive := fs.Duration("seat-keepalive", def.SeatKeepAlive, "how often an edge proves a seat's connection to its grain")
	snapEvery := fs.Int("snapshot-every", def.SnapshotEvery, "snapshot a match every N log entries")
	resumeWindow := fs.Int("resume-window", def.ResumeWindow, "events of each match kept in memory for resumes (older ones are read back from the log when a client resumes from further back)")
	idleStop := fs.Duration("idle-stop", def.IdleStop, "stop a finished match's grain after this long without requests")
	botThink := fs.Duration("bot-think", def.BotThink, "how long a bot seat thinks before each decision (shorter than decision-time)")
	ttl := fs.Duration("ticket-ttl", edge.DefaultTicketTTL, "ticket lifetime")
	hello := fs.Duration("hello-timeout", edge.DefaultHelloTimeout, "time a new connection has to send ClientHello")
	hbIdle := fs.Duration("heartbeat-idle", edge.DefaultHeartbeatIdle, "send ServerPing after this long without a client frame")
	hbTimeout := fs.Duration("heartbeat-timeout", edge.DefaultHeartbeatTimeout, "close (4408) this long after the last client frame")
	resumeTickets := fs.Bool("resume-tickets", true, "send a connected session that asks for it a fresh single-use ticket for its own seat (ServerResumeTicket), so that it can reconnect without a new ticket from the ticket service; false: every reconnect needs one")
	parkReaders := fs.Bool("park-readers", true, "a quiet connection's reader (after the hello and each keep-alive) waits on a fresh goroutine with the smallest stack: about 2 KiB less memory per quiet connection")
	reclaim := fs.Duration("reclaim-interval", 30*time.Second, "how often this member wakes the unfinished matches it owns")
	storeTimeout := fs.Duration("store-timeout", 5*time.Second, "bound of one store call of a match grain (an append, a claim); an append that outlasts it has an unknown outcome and stops the grain, which reactivates from the log")
	clockSkew := fs.Duration("max-clock-skew", actors.DefaultMaxClockSkew, "how far this member's clock may run ahead of another's: a request from another member is dropped once it is this much past its deadline by this member's clock (docs/operations.md §10)")
	lease := fs.Duration("reclaim-lease", 15*time.Second, "the reclaimer leaves a match alone if another member still in this member's view wrote it this recently")
	probe := fs.Duration("probe-interval", 0, "memberlist probe interval (0: the cluster default, tuned for a LAN)")
	suspMult := fs.Int("suspicion-mult", 0, "memberlist suspicion multiplier (0: the cluster default)")
	closedHint := fs.Bool("closed-connection-hint", true, "declare a peer dead at once when its connection closed and its ports refuse connections (a killed process); false: only the probes decide, for networks whose firewalls refuse instead of dropping during a cut")
	suspMax := fs.Int("suspicion-max-timeout-mult", 0, "upper bound of the suspicion timeout while confirmations are missing, as a multiple of the base (0: the cluster default)")
	reqTimeout := fs.Duration("request-timeout", 0, "how long a player's call (open seat, intent, resync) or an API call waits for its match, retrying through a failover; shorter than --heartbeat-timeout (0: derived from failure detection, the crash-detection bound + 5 s, at least 10 s)")
	gossipKey := fs.String("gossip-key", "", "base64 gossip keys (16, 24 or 32 bytes), comma-separated, the first encrypts; prefer MATCHD_GOSSIP_KEY or --gossip-key-file over the command line")
	gossipKeyFile := fs.String("gossip-key-file", "", "file of base64 gossip keys, one per line, the first encrypts; re-read on change (rotation: add the new key everywhere, move it first everywhere, remove the old one)")
	tlsCert := fs.String("cluster-tls-cert", "", "PEM certificate of this member for the actor remote's mutual TLS (server and client; SAN = the remote host peers dial)")
	tlsKey := fs.String("cluster-tls-key", "", "PEM private key of --cluster-tls-cert")
	tlsCA := fs.String("cluster-tls-ca", "", "PEM CA that signs every member certificate")
	secretsReload := fs.Duration("cluster-secrets-reload", cluster.DefaultSecretsReload, "how often the gossip key file and cluster TLS files are checked for changes")
	insecure := fs.Bool("insecure-cluster", false, "allow gossip and remote on non-loopback addresses without a gossip key and TLS (anyone reaching them can join and command any match)")
	retAfter := fs.Duration("retention-prune-after", 0, "delete the log of a finished match this long after its last write, keeping its result and final snapshot (0: keep logs forever; PostgreSQL only)")
	retEvery := fs.Duration("retention-interval", time.Hour, "how often the retention job runs")
	drain := fs.Duration("drain-timeout", 20*time.Second, "on SIGTERM: longest graceful drain (sessions told to reconnect elsewhere, matches handed over); the process exits by this bound plus 5 s")
	maxConns := fs.Int("max-connections", edge.DefaultMaxConnections, "most open client connections (HTTP and TCP) this edge accepts; more are refused (503 / RateLimited)")
	maxPerAddr := fs.Int("max-connections-per-address", edge.DefaultMaxConnsPerAddress, "most open client connections per IPv4 address or IPv6 /64; more are refused (429 / RateLimited)")
	maxHandshakes := fs.Int("max-handshakes", edge.DefaultMaxHandshakes, "most connections that have not finished an HTTP request or ClientHello; more are refused (503 / RateLimited)")
	maxBody := fs.Int("max-body-bytes", edge.DefaultMaxBodyBytes, "largest HTTP API request body (413 above)")
	maxHeader := fs.Int("max-header-bytes", edge.DefaultMaxHeaderBytes, "largest HTTP request header (431 above)")
	httpHeader := fs.Duration("http-header-timeout", edge.DefaultHTTPHeaderTimeout, "time to read an HTTP request header")
	httpRead := fs.Duration("http-read-timeout", edge.DefaultHTTPReadTimeout, "time to read a whole HTTP request, body included")
	httpWrite := fs.Duration("http-write-timeout", edge.DefaultHTTPWriteTimeout, "time to write an HTTP response")
	httpIdle := fs.Duration("http-idle-timeout", edge.DefaultHTTPIdleTimeout, "close keep-alive HTTP connections idle this long")
	writeTimeout := fs.Duration("write-timeout", edge.DefaultWriteTimeout, "a game client that does not take a frame within this is disconnected")
	intentRate := fs.Float64("intents-per-second", edge.DefaultIntentsPerSecond, "intents a connection may send per second")
	intentBurst := fs.Int("intent-burst", edge.DefaultIntentBurst, "intents a connection may send at once")
	abuseFactor := fs.Float64("abuse-factor", edge.DefaultAbuseFactor, "frames per second above this multiple of --intents-per-second, sustained over --abuse-window, close the connection (4413)")
	abuseWindow := fs.Duration("abuse-window", edge.DefaultAbuseWindow, "see --abuse-factor")
	metricsListen := fs.String("metrics-listen", "", "serve /metrics on this address only (e.g. a private 10.x:9100) instead of on --listen")
	adminPrev := fs.String("admin-tokens-previous", "", "comma-separated admin tokens still accepted during a rotation (MATCHD_ADMIN_TOKENS_PREVIOUS)")
	debugListen := fs.String("debug-listen", "", "loopback address (127.0.0.1:PORT) serving net/http/pprof under /debug/pprof/; empty: off")
	gcBusyPercent := fs.Int("gc-busy-percent", DefaultGCBusyPercent, "GOGC while the node is busy (and always with --gc-quiet-percent 0): 40 keeps about a third less resident memory per running match than Go's 100 for a few per cent more of the node's CPU; ignored when the GOGC environment variable is set")
	gcMinHeadroom := fs.Int("gc-min-headroom-mib", 0, "while the node is busy, the GC governor raises GOGC above --gc-busy-percent when that would let the heap grow by less than this many MiB past its live size: a small heap that allocates fast (a cluster member whose sessions' matches live elsewhere) collects less often, for up to this much more memory (0: off; needs the governor, --gc-quiet-percent above 0); ignored when the GOGC environment variable is set")
	gcHerdPercent := fs.Int("gc-herd-percent", DefaultGCHerdPercent, "GOGC for 10 s after another member of the cluster left or died, while this one takes over its matches and their players re-attach (with the GC governor on, --gc-quiet-percent above 0): the collector's CPU is dearer than memory then, and the heap may grow to (1 + this/100) times its live size for those seconds; 0: off; never below --gc-busy-percent; ignored when the GOGC environment variable is set")
	gcQuietPercent := fs.Int("gc-quiet-percent", 25, "GOGC while the node is quiet (it allocates so little for its heap that collections at this GOGC would come less than 0.6 times a second; --gc-busy-percent otherwise): less memory for quiet connections at little CPU; 0: off; below --gc-busy-percent; ignored when the GOGC environment variable is set")
	procGov := fs.Bool("proc-governor", false, "run Go code on one processor while the node uses under 0.7 of a core, and on the default number from 0.8 of a core on: saves the threads woken for nothing between intents (docs/operations.md §8); ignored when the GOMAXPROCS environment variable is set")
	demoDelay := fs.Duration("demo-delay", 400*time.Millisecond, "pause between bot moves in --demo")
	maxSpectators := fs.Int("max-spectators", 64, "most spectators one match accepts at once (more are refused with close 4429); 0: no spectators")
	specDelayEvents := fs.Int("spectator-delay-events", 0, "spectators see a batch of events once this many later events exist, or the match ended (against ghosting; below --resume-window; every member the same)")
	specDelay := fs.Duration("spectator-delay", 0, "spectators see a batch of events once it is this old (against ghosting; every member the same)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if len(fs.envErr) > 0 {
		return o, errors.Join(fs.envErr...)
	}
	o.Cluster = cluster.Config{NodeName: *nodeName, GossipAddr: *gossip, Join: splitList(*join), RemoteAddr: *remote,
		AdvertiseRemoteAddr: *advertiseRemote, ClusterName: *cname,
		FailureDetection: cluster.FailureDetection{ProbeInterval: *probe, SuspicionMult: *suspMult, SuspicionMaxTimeoutMult: *suspMax,
			IgnoreClosedConnections: !*closedHint}}
	o.DatabaseURL, o.DatabaseSchema, o.DataDir, o.Listen, o.TCPListen = *dburl, *dbSchema, *dataDir, *listen, *tcpListen
	o.AdminToken, o.TicketKey = *admin, *tkey
	o.EdgeOnly, o.Demo, o.DemoExit, o.JSONLogs, o.LogLevel = *edgeOnly, *demo, *demoExit, *jsonLogs, *level
	if *publicCreates <= 0 || *publicCreatesGlobal <= 0 {
		return o, fmt.Errorf("public-creates-per-minute (%v) and public-creates-global-per-minute (%v) must be positive", *publicCreates, *publicCreatesGlobal)
	}
	o.Timing = actors.Timing{DecisionTime: *decision, BankTime: *bank, AbsenceTimeout: *absence, ClockInterval: *clock,
		SeatKeepAlive: *keepAlive, SnapshotEvery: *snapEvery, ResumeWindow: *resumeWindow, IdleStop: *idleStop, BotThink: *botThink}
	o.ReclaimInterval, o.ReclaimLease, o.DemoDelay = *reclaim, *lease, *demoDelay
	if *storeTimeout <= 0 {
		return o, fmt.Errorf("store-timeout must be positive, got %v", *storeTimeout)
	}
	o.StoreTimeout = *storeTimeout
	if *clockSkew <= 0 {
		return o, fmt.Errorf("max-clock-skew must be positive, got %v", *clockSkew)
	}
	o.MaxClockSkew = *clockSkew
	if *dbUserTimeout < 0 || *dbKeepAlive < 0 {
		return o, fmt.Errorf("database-tcp-user-timeout (%v) and database-keepalive (%v) must not be negative", *dbUserTimeout, *dbKeepAlive)
	}
	o.DatabaseTCP = persistence.DefaultTCPTimeouts
	o.DatabaseTCP.UserTimeout, o.DatabaseTCP.KeepAliveIdle = *dbUserTimeout, *dbKeepAlive
	if *dbUserTimeout == 0 {
		o.DatabaseTCP.UserTimeout = -1
	}
	if *dbKeepAlive == 0 {
		o.DatabaseTCP.KeepAliveIdle = -1
	}
	requestTimeout := *reqTimeout
	if requestTimeout == 0 {
		requestTimeout = edgePatience(o.Cluster.FailureDetection)
	}
	if requestTimeout < 0 || requestTimeout >= *hbTimeout {
		// The session's reader waits for the call; the heartbeat deadline
		// counts from the frame before it.
		return o, fmt.Errorf("request-timeout (%v) must be positive and shorter than heartbeat-timeout (%v)", requestTimeout, *hbTimeout)
	}
	if *httpWrite <= requestTimeout {
		if *httpWrite != edge.DefaultHTTPWriteTimeout {
			return o, fmt.Errorf("http-write-timeout (%v) must be longer than request-timeout (%v): an API response is written after its call", *httpWrite, requestTimeout)
		}
		// The default write deadline follows a derived, longer patience.
		*httpWrite = requestTimeout + 5*time.Second
	}
	o.DebugListen = *debugListen
	if *gcBusyPercent < 10 || *gcBusyPercent > 1000 {
		return o, fmt.Errorf("gc-busy-percent (%d) must be between 10 and 1000", *gcBusyPercent)
	}
	if *gcQuietPercent < 0 || *gcQuietPercent >= *gcBusyPercent {
		return o, fmt.Errorf("gc-quiet-percent (%d) must be 0 (off) or below gc-busy-percent (%d)", *gcQuietPercent, *gcBusyPercent)
	}
	if *gcMinHeadroom < 0 || *gcMinHeadroom > 4096 {
		return o, fmt.Errorf("gc-min-headroom-mib (%d) must be between 0 (off) and 4096", *gcMinHeadroom)
	}
	if *gcHerdPercent != 0 && (*gcHerdPercent < 10 || *gcHerdPercent > 1000) {
		return o, fmt.Errorf("gc-herd-percent (%d) must be 0 (off) or between 10 and 1000", *gcHerdPercent)
	}
	o.GCBusyPercent, o.GCQuietPercent, o.GCHerdPercent = *gcBusyPercent, *gcQuietPercent, *gcHerdPercent
	o.GCMinHeadroom = uint64(*gcMinHeadroom) << 20
	o.ProcGovernor = *procGov
	if o.DebugListen != "" {
		if err := DebugLoopbackOnly(o.DebugListen); err != nil {
			return o, err
		}
	}
	o.SecretsRefresh, o.TicketKeyRotation, o.DrainTimeout = *secretsRefresh, *rotation, *drain
	o.RetentionAfter, o.RetentionInterval = *retAfter, *retEvery
	if o.RetentionAfter < 0 || o.RetentionInterval <= 0 {
		return o, errors.New("retention-prune-after must not be negative, retention-interval must be positive")
	}
	if o.SecretsRefresh <= 0 || o.TicketKeyRotation < 0 || o.DrainTimeout <= 0 {
		return o, errors.New("secrets-refresh and drain-timeout must be positive, ticket-key-rotation not negative")
	}
	if err := o.Timing.Validate(); err != nil {
		return o, err
	}
	o.MetricsListen = *metricsListen
	o.Edge = edge.Config{TicketTTL: *ttl, HelloTimeout: *hello, HeartbeatIdle: *hbIdle, HeartbeatTimeout: *hbTimeout,
		RequestTimeout: requestTimeout, NoReaderParking: !*parkReaders, NoResumeTickets: !*resumeTickets, AllowedOrigins: splitList(*origins),
		PublicPlay: *publicPlay || *demo, PublicCreatesPerMinute: *publicCreates, PublicCreatesGlobalPerMinute: *publicCreatesGlobal,
		AdminTokensPrevious: splitList(*adminPrev), SeparateMetrics: o.MetricsListen != "",
		MaxConnections: *maxConns, MaxConnectionsPerAddress: *maxPerAddr, MaxHandshakes: *maxHandshakes,
		MaxBodyBytes: int64(*maxBody), MaxHeaderBytes: *maxHeader, HTTPHeaderTimeout: *httpHeader, HTTPReadTimeout: *httpRead,
		HTTPWriteTimeout: *httpWrite, HTTPIdleTimeout: *httpIdle, WriteTimeout: *writeTimeout,
		IntentsPerSecond: *intentRate, IntentBurst: *intentBurst, AbuseFactor: *abuseFactor, AbuseWindow: *abuseWindow}
	if o.Timing.BotThink >= o.Timing.DecisionTime {
		return o, errors.New("bot-think must be shorter than decision-time")
	}
	switch {
	case *maxSpectators < 0:
		return o, fmt.Errorf("max-spectators must not be negative, got %d", *maxSpectators)
	case *specDelayEvents < 0 || *specDelayEvents >= o.Timing.ResumeWindow:
		return o, fmt.Errorf("spectator-delay-events (%d) must be at least 0 and below resume-window (%d)", *specDelayEvents, o.Timing.ResumeWindow)
	case *specDelay < 0:
		return o, fmt.Errorf("spectator-delay must not be negative, got %v", *specDelay)
	}
	o.Edge.MaxSpectators, o.Edge.SpectatorDelayEvents, o.Edge.SpectatorDelay = *maxSpectators, *specDelayEvents, *specDelay
	o.SpectatorDelayEvents, o.SpectatorDelay = *specDelayEvents, *specDelay
	o.Cluster.Security = cluster.Security{GossipKeyFile: *gossipKeyFile, Insecure: *insecure, ReloadInterval: *secretsReload}
	if *gossipKey != "" {
		keys, err := cluster.ParseGossipKeys(*gossipKey)
		if err != nil {
			return o, fmt.Errorf("gossip-key: %w", err)
		}
		o.Cluster.Security.GossipKeys = keys
	}
	switch {
	case *tlsCert != "" && *tlsKey != "" && *tlsCA != "":
		o.Cluster.Security.TLS = &cluster.TLSFiles{CertFile: *tlsCert, KeyFile: *tlsKey, CAFile: *tlsCA}
	case *tlsCert != "" || *tlsKey != "" || *tlsCA != "":
		return o, errors.New("cluster-tls-cert, cluster-tls-key and cluster-tls-ca go together")
	}
	return o, nil
}

// edgePatience is the default --request-timeout: a player's call must outlast
// the failover of its match's member, or the player is told to reconnect
// (4500) in the middle of a failover that was about to end. A failover is
// the crash detection plus the new owner's activation, which one cluster
// request attempt bounds. With the LAN defaults this is the edge's 10 s; with
// a 2 s probe interval, 27 s.
func edgePatience(fd cluster.FailureDetection) time.Duration {
	return max(edge.DefaultRequestTimeout, fd.CrashDetection()+cluster.DefaultRequestTimeout)
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "matchd"
	}
	return h
}

// DebugLoopbackOnly refuses a --debug-listen address that is not on the
// loopback interface: the profiling endpoints are not authenticated, and a
// CPU profile or a heap dump must never be reachable from the network.
func DebugLoopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--debug-listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--debug-listen %q: the profiling endpoints are unauthenticated, so the host must be a loopback address (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}
