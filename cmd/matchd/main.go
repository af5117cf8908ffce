package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/clusterkeys"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/grains"
	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/internal/governor"
	"github.com/matchgrain/matchgrain/ops"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/web"
)

// options is every setting of a node, from flags and MATCHD_* variables.
type options struct {
	nodeName, gossipAddr, join, remoteAddr, clusterName string
	databaseURL, databaseSchema, dataDir                string
	listen, tcpListen, adminToken, ticketKey, origins   string
	edgeOnly, demo, demoExit, jsonLogs, publicPlay      bool
	logLevel                                            string
	timing                                              actors.Timing
	ticketTTL, helloTimeout, hbIdle, hbTimeout          time.Duration
	parkReaders                                         bool
	reclaimInterval, reclaimLease                       time.Duration
	storeTimeout                                        time.Duration
	secretsRefresh, ticketKeyRotation                   time.Duration
	drainTimeout                                        time.Duration
	retentionAfter, retentionInterval                   time.Duration
	probeInterval                                       time.Duration
	suspicionMult, suspicionMaxMult                     int
	demoDelay                                           time.Duration
	security                                            cluster.Security
	// limits holds the edge's exhaustion limits and HTTP deadlines only;
	// run copies them into the edge config.
	limits        edge.Config
	metricsListen string
	adminPrevious string
	debugListen   string
	// gcQuietPercent is the GC governor's GOGC for a quiet node (0: off).
	gcQuietPercent int
	// procGovernor turns on the Proc governor (one processor while the node is light).
	procGovernor bool
	// publicCreates and publicCreatesGlobal bound public match creation
	// per minute, per client address (IPv4, IPv6 /64) and for the edge.
	publicCreates, publicCreatesGlobal float64
	// requestTimeout is the edge's patience: how long one player or API
	// call waits for its match, retrying through a failover (edgePatience).
	requestTimeout time.Duration
	// advertiseRemote is what peers dial when it is not remoteAddr: a name
	// the member's TLS certificate holds, where the bound address is a
	// container's own IP (compose).
	advertiseRemote string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := &flagSet{FlagSet: flag.NewFlagSet("matchd", flag.ContinueOnError)}
	def := actors.DefaultTiming()
	fs.StringVar(&o.nodeName, "node-name", envOr("node-name", hostname()), "name of this node in logs (env MATCHD_NODE_NAME)")
	gossip := fs.String("gossip-addr", "127.0.0.1:7946", "ip:port memberlist binds for gossip")
	join := fs.String("join", "", "comma-separated gossip addresses of seed members")
	remote := fs.String("remote-addr", "127.0.0.1:8090", "host:port of the actor remote; peers dial it, so not 0.0.0.0")
	advertiseRemote := fs.String("advertise-remote-addr", "", "host:port peers dial for the actor remote when it differs from --remote-addr (which may then be 0.0.0.0): a name this member's cluster TLS certificate holds")
	cname := fs.String("cluster-name", "matchgrain", "cluster name; members of other clusters are ignored")
	dburl := fs.String("database-url", "", "PostgreSQL URL; empty uses the embedded store under --data-dir")
	dbSchema := fs.String("database-schema", "", "PostgreSQL schema for the tables (empty: the connection's search_path)")
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
	parkReaders := fs.Bool("park-readers", true, "a quiet connection's reader (after the hello and each keep-alive) waits on a fresh goroutine with the smallest stack: about 2 KiB less memory per quiet connection")
	reclaim := fs.Duration("reclaim-interval", 30*time.Second, "how often this member wakes the unfinished matches it owns")
	storeTimeout := fs.Duration("store-timeout", 5*time.Second, "bound of one store call of a match grain (an append, a claim); an append that outlasts it has an unknown outcome and stops the grain, which reactivates from the log")
	lease := fs.Duration("reclaim-lease", 15*time.Second, "the reclaimer leaves a match alone if another member still in this member's view wrote it this recently")
	probe := fs.Duration("probe-interval", 0, "memberlist probe interval (0: the cluster default, tuned for a LAN)")
	suspMult := fs.Int("suspicion-mult", 0, "memberlist suspicion multiplier (0: the cluster default)")
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
	gcQuietPercent := fs.Int("gc-quiet-percent", 25, "GOGC while the node is quiet (it allocates so little for its heap that collections at this GOGC would come less than 0.6 times a second; 100 otherwise): less memory for quiet connections at little CPU; 0: off; ignored when the GOGC environment variable is set")
	procGov := fs.Bool("proc-governor", false, "run Go code on one processor while the node uses under 0.7 of a core, and on the default number from 0.8 of a core on: saves the threads woken for nothing between intents (docs/operations.md §8); ignored when the GOMAXPROCS environment variable is set")
	demoDelay := fs.Duration("demo-delay", 400*time.Millisecond, "pause between bot moves in --demo")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if len(fs.envErr) > 0 {
		return o, errors.Join(fs.envErr...)
	}
	o.gossipAddr, o.join, o.remoteAddr, o.clusterName = *gossip, *join, *remote, *cname
	o.advertiseRemote = *advertiseRemote
	o.databaseURL, o.databaseSchema, o.dataDir, o.listen, o.tcpListen = *dburl, *dbSchema, *dataDir, *listen, *tcpListen
	o.adminToken, o.ticketKey, o.origins = *admin, *tkey, *origins
	o.edgeOnly, o.demo, o.demoExit, o.jsonLogs, o.logLevel = *edgeOnly, *demo, *demoExit, *jsonLogs, *level
	o.publicPlay = *publicPlay || *demo
	if *publicCreates <= 0 || *publicCreatesGlobal <= 0 {
		return o, fmt.Errorf("public-creates-per-minute (%v) and public-creates-global-per-minute (%v) must be positive", *publicCreates, *publicCreatesGlobal)
	}
	o.publicCreates, o.publicCreatesGlobal = *publicCreates, *publicCreatesGlobal
	o.timing = actors.Timing{DecisionTime: *decision, BankTime: *bank, AbsenceTimeout: *absence, ClockInterval: *clock,
		SeatKeepAlive: *keepAlive, SnapshotEvery: *snapEvery, ResumeWindow: *resumeWindow, IdleStop: *idleStop, BotThink: *botThink}
	o.ticketTTL, o.helloTimeout, o.hbIdle, o.hbTimeout = *ttl, *hello, *hbIdle, *hbTimeout
	o.parkReaders = *parkReaders
	o.reclaimInterval, o.reclaimLease, o.probeInterval, o.demoDelay = *reclaim, *lease, *probe, *demoDelay
	if *storeTimeout <= 0 {
		return o, fmt.Errorf("store-timeout must be positive, got %v", *storeTimeout)
	}
	o.storeTimeout = *storeTimeout
	o.suspicionMult, o.suspicionMaxMult = *suspMult, *suspMax
	o.requestTimeout = *reqTimeout
	if o.requestTimeout == 0 {
		o.requestTimeout = edgePatience(o.failureDetection())
	}
	if o.requestTimeout < 0 || o.requestTimeout >= o.hbTimeout {
		// The session's reader waits for the call; the heartbeat deadline
		// counts from the frame before it.
		return o, fmt.Errorf("request-timeout (%v) must be positive and shorter than heartbeat-timeout (%v)", o.requestTimeout, o.hbTimeout)
	}
	if *httpWrite <= o.requestTimeout {
		if *httpWrite != edge.DefaultHTTPWriteTimeout {
			return o, fmt.Errorf("http-write-timeout (%v) must be longer than request-timeout (%v): an API response is written after its call", *httpWrite, o.requestTimeout)
		}
		// The default write deadline follows a derived, longer patience.
		*httpWrite = o.requestTimeout + 5*time.Second
	}
	o.debugListen = *debugListen
	if *gcQuietPercent < 0 || *gcQuietPercent >= 100 {
		return o, errors.New("gc-quiet-percent must be 0 (off) or below 100")
	}
	o.gcQuietPercent = *gcQuietPercent
	o.procGovernor = *procGov
	if o.debugListen != "" {
		if err := debugLoopbackOnly(o.debugListen); err != nil {
			return o, err
		}
	}
	o.secretsRefresh, o.ticketKeyRotation, o.drainTimeout = *secretsRefresh, *rotation, *drain
	o.retentionAfter, o.retentionInterval = *retAfter, *retEvery
	if o.retentionAfter < 0 || o.retentionInterval <= 0 {
		return o, errors.New("retention-prune-after must not be negative, retention-interval must be positive")
	}
	if o.secretsRefresh <= 0 || o.ticketKeyRotation < 0 || o.drainTimeout <= 0 {
		return o, errors.New("secrets-refresh and drain-timeout must be positive, ticket-key-rotation not negative")
	}
	if err := o.timing.Validate(); err != nil {
		return o, err
	}
	o.limits = edge.Config{MaxConnections: *maxConns, MaxConnectionsPerAddress: *maxPerAddr, MaxHandshakes: *maxHandshakes,
		MaxBodyBytes: int64(*maxBody), MaxHeaderBytes: *maxHeader, HTTPHeaderTimeout: *httpHeader, HTTPReadTimeout: *httpRead,
		HTTPWriteTimeout: *httpWrite, HTTPIdleTimeout: *httpIdle, WriteTimeout: *writeTimeout,
		IntentsPerSecond: *intentRate, IntentBurst: *intentBurst, AbuseFactor: *abuseFactor, AbuseWindow: *abuseWindow}
	o.metricsListen, o.adminPrevious = *metricsListen, *adminPrev
	if o.timing.BotThink >= o.timing.DecisionTime {
		return o, errors.New("bot-think must be shorter than decision-time")
	}
	o.security = cluster.Security{GossipKeyFile: *gossipKeyFile, Insecure: *insecure, ReloadInterval: *secretsReload}
	if *gossipKey != "" {
		keys, err := cluster.ParseGossipKeys(*gossipKey)
		if err != nil {
			return o, fmt.Errorf("gossip-key: %w", err)
		}
		o.security.GossipKeys = keys
	}
	switch {
	case *tlsCert != "" && *tlsKey != "" && *tlsCA != "":
		o.security.TLS = &cluster.TLSFiles{CertFile: *tlsCert, KeyFile: *tlsKey, CAFile: *tlsCA}
	case *tlsCert != "" || *tlsKey != "" || *tlsCA != "":
		return o, errors.New("cluster-tls-cert, cluster-tls-key and cluster-tls-ca go together")
	}
	return o, nil
}

// failureDetection is the member's failure detection from the flags (zero
// fields take the cluster's defaults).
func (o options) failureDetection() cluster.FailureDetection {
	return cluster.FailureDetection{ProbeInterval: o.probeInterval, SuspicionMult: o.suspicionMult,
		SuspicionMaxTimeoutMult: o.suspicionMaxMult}
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

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(envName(name)); ok {
		return v
	}
	return def
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "matchd"
	}
	return h
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "matchd:", err)
		os.Exit(2)
	}
	log := newLogger(o)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error("matchd stopped", "err", err)
		os.Exit(1)
	}
}

func newLogger(o options) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, hopts)
	if o.jsonLogs {
		h = slog.NewJSONHandler(os.Stderr, hopts)
	}
	l := slog.New(h)
	slog.SetDefault(l.With("node", o.nodeName))
	return l
}

// run starts every part of the node, serves until ctx ends, then stops them
// in the order docs/cluster.md §5.3 recommends: stop taking players, leave the
// cluster so peers take the matches over, close the store.
func run(ctx context.Context, o options, base *slog.Logger) error {
	// cluster.Start names the node in its own lines; everything else here
	// gets the name from log.
	log := base.With("node", o.nodeName)
	envelope.SetLogger(log)
	if g := governor.NewGC(100, o.gcQuietPercent, governor.GCQuietMaxCycles, log); g != nil {
		gctx, stopGovernor := context.WithCancel(ctx)
		defer stopGovernor()
		go g.Run(gctx, governor.GCInterval)
	}
	if g := governor.NewProc(o.procGovernor, log); g != nil {
		pctx, stopGovernor := context.WithCancel(ctx)
		defer stopGovernor()
		go g.Run(pctx, governor.ProcSample)
	}
	statements := persistence.NewStatementHistogram()
	store, err := openStore(ctx, o, log, statements)
	if err != nil {
		return err
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Warn("close store", "err", err)
		}
	}()
	// Before joining: a member of another cluster must not start on this
	// cluster's database (it would claim that cluster's matches).
	identity, err := o.security.Identity(o.clusterName)
	if err != nil {
		return fmt.Errorf("cluster identity: %w", err)
	}
	if err := clusterkeys.CheckIdentity(ctx, store, identity); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}

	var node *cluster.Node
	// started publishes node to the grains' callbacks: a peer may route an
	// activation here while cluster.Start is still running, before the
	// assignment of node is visible to other goroutines.
	var started atomic.Pointer[cluster.Node]
	var kinds []*pcluster.Kind
	// draining refuses new activations once the drain began or peers
	// evicted this member: its matches belong elsewhere from then on.
	var draining atomic.Bool
	// One registry holds every metric of this node; the edge serves it at
	// /metrics. Parts that add metrics register their collectors here.
	registry := edge.NewRegistry()
	grainMetrics, err := actors.NewMetrics(registry)
	if err != nil {
		return err
	}
	if err := persistence.RegisterMetrics(registry, store, statements); err != nil {
		return err
	}
	if !o.edgeOnly {
		kind, err := actors.NewMatchKind(actors.GrainDeps{
			Store: store, Rules: actors.GameRules{}, Timing: o.timing, Logger: log, Metrics: grainMetrics,
			StoreTimeout: o.storeTimeout,
			Owner:        func() string { return started.Load().ID() },
			MayActivate: func() error {
				node := started.Load()
				switch {
				case node == nil:
					return errors.New("this member is still starting")
				case draining.Load():
					return errors.New("this member is draining")
				case node.Unsettled():
					return errors.New("this process was stalled moments ago; its view of the cluster may be stale")
				}
				return node.Admitted()
			},
			Owns: func(id string) bool {
				node := started.Load()
				return node != nil && node.OwnerAddress(id, actors.MatchKind) == node.Self()
			},
		})
		if err != nil {
			return err
		}
		kinds = append(kinds, kind)
	}
	node, err = cluster.Start(cluster.Config{
		NodeName: o.nodeName, GossipAddr: o.gossipAddr, Join: splitList(o.join), RemoteAddr: o.remoteAddr,
		AdvertiseRemoteAddr: o.advertiseRemote, ClusterName: o.clusterName,
		Kinds: kinds, FailureDetection: o.failureDetection(), Security: o.security, Logger: base,
		Info: map[string]string{ops.InfoRules: actors.RulesVersion(actors.GameRules{}), ops.InfoBuild: buildVersion()},
	})
	if err != nil {
		return fmt.Errorf("start cluster member: %w", err)
	}
	started.Store(node)
	gw, err := grains.NewGateway(grains.GatewayConfig{
		System: node.System(), Cluster: node, Store: store, Rules: actors.GameRules{}, Timing: o.timing,
		Forget: func(id string) { node.ForgetPID(id, actors.MatchKind) }, Logger: log,
		// A seat looks for its moved grain at least as long as a player's
		// call waits for it (the gateway's default is 30 s).
		ReattachTimeout: max(30*time.Second, o.requestTimeout),
	})
	if err != nil {
		node.Kill()
		return err
	}

	ticketKey, err := hex.DecodeString(o.ticketKey)
	if err != nil {
		node.Kill()
		return fmt.Errorf("ticket-key must be hex: %w", err)
	}
	sec, err := clusterkeys.Load(ctx, clusterkeys.Options{AdminToken: o.adminToken, TicketKey: ticketKey, DataDir: o.dataDir,
		TicketTTL: o.ticketTTL, Refresh: o.secretsRefresh, Rotation: o.ticketKeyRotation, Logger: log}, store)
	if err != nil {
		node.Kill()
		return err
	}
	adminToken := sec.AdminToken
	srv, err := edge.New(edge.Config{
		TicketKey: sec.TicketKey, TicketPreviousKeys: sec.TicketAccept, TicketTTL: o.ticketTTL, AdminToken: adminToken, Decks: deckInfos,
		HelloTimeout: o.helloTimeout, HeartbeatIdle: o.hbIdle, HeartbeatTimeout: o.hbTimeout, RequestTimeout: o.requestTimeout,
		NoReaderParking: !o.parkReaders,
		AllowedOrigins:  splitList(o.origins), Logger: log, Registry: registry,
		PublicPlay: o.publicPlay, PublicCreatesPerMinute: o.publicCreates, PublicCreatesGlobalPerMinute: o.publicCreatesGlobal,
		UseOnce: func(ctx context.Context, id string, expires time.Time, claimant string) error {
			// A friend invite is used once across every edge: the store's used tickets.
			err := store.ConsumeTicket(ctx, id, expires, claimant)
			if errors.Is(err, persistence.ErrTicketUsed) {
				return fmt.Errorf("%w: %w", edge.ErrTicketUsed, err)
			}
			return err
		},
		Admitted: node.Admitted,
		Admin: ops.Handler(ops.Deps{Node: node, Store: store, Rules: actors.GameRules{}, Timing: o.timing,
			Status: gw.Status, Takeovers: grainMetrics.RecentTakeovers, Logger: log}),
		Fallback:            web.Handler(),
		AdminTokensPrevious: splitList(o.adminPrevious), SeparateMetrics: o.metricsListen != "",
		MaxConnections: o.limits.MaxConnections, MaxConnectionsPerAddress: o.limits.MaxConnectionsPerAddress,
		MaxHandshakes: o.limits.MaxHandshakes, MaxBodyBytes: o.limits.MaxBodyBytes, MaxHeaderBytes: o.limits.MaxHeaderBytes,
		HTTPHeaderTimeout: o.limits.HTTPHeaderTimeout, HTTPReadTimeout: o.limits.HTTPReadTimeout,
		HTTPWriteTimeout: o.limits.HTTPWriteTimeout, HTTPIdleTimeout: o.limits.HTTPIdleTimeout, WriteTimeout: o.limits.WriteTimeout,
		IntentsPerSecond: o.limits.IntentsPerSecond, IntentBurst: o.limits.IntentBurst,
		AbuseFactor: o.limits.AbuseFactor, AbuseWindow: o.limits.AbuseWindow,
	}, gw)
	if err != nil {
		node.Kill()
		return err
	}
	httpLn, err := net.Listen("tcp", o.listen)
	if err != nil {
		node.Kill()
		return fmt.Errorf("listen %s: %w", o.listen, err)
	}
	hs := srv.HTTPServer()
	errc := make(chan error, 5)
	go func() { errc <- fmt.Errorf("http: %w", hs.Serve(srv.LimitListener(httpLn))) }()
	metricsAddr := httpLn.Addr().String()
	if o.metricsListen != "" {
		ml, err := net.Listen("tcp", o.metricsListen)
		if err != nil {
			node.Kill()
			return fmt.Errorf("listen %s: %w", o.metricsListen, err)
		}
		metricsAddr = ml.Addr().String()
		ms := &http.Server{Handler: srv.MetricsHandler(), ReadHeaderTimeout: o.limits.HTTPHeaderTimeout,
			ReadTimeout: o.limits.HTTPReadTimeout, WriteTimeout: o.limits.HTTPWriteTimeout, IdleTimeout: o.limits.HTTPIdleTimeout}
		go func() { errc <- fmt.Errorf("metrics http: %w", ms.Serve(ml)) }()
		defer func() { _ = ms.Close() }() // scrapes in flight at exit do not matter
	}
	tcpAddr := ""
	if o.tcpListen != "" {
		tl, err := net.Listen("tcp", o.tcpListen)
		if err != nil {
			node.Kill()
			return fmt.Errorf("listen %s: %w", o.tcpListen, err)
		}
		tcpAddr = tl.Addr().String()
		go func() { errc <- fmt.Errorf("tcp: %w", srv.ServeTCP(tl)) }()
	}
	if !o.edgeOnly {
		leases := cluster.NewLeases(node, o.reclaimLease)
		rc, err := cluster.NewReclaimer(node, cluster.ReclaimerConfig{
			Kind: actors.MatchKind, Interval: o.reclaimInterval,
			List: func(ctx context.Context, after string, limit int) ([]string, error) {
				ms, err := store.ListUnfinished(ctx, after, limit)
				records := make([]cluster.LeaseRecord, len(ms))
				ids := make([]string, len(ms))
				for i, m := range ms {
					records[i] = cluster.LeaseRecord{Identity: m.MatchID, Owner: m.Owner, Age: m.Age}
					ids[i] = m.MatchID
				}
				leases.Page(records)
				return ids, err
			},
			Leased: leases.Held,
			Wake:   func(string) any { return &actors.Wake{} },
		})
		if err != nil {
			node.Kill()
			return err
		}
		go func() {
			if err := rc.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Warn("reclaimer stopped", "err", err)
			}
		}()
	}
	go persistence.PurgeTicketsEvery(ctx, store, persistence.TicketPurgeInterval, log)
	if rs, ok := store.(persistence.Retention); ok && o.retentionAfter > 0 {
		go persistence.PruneFinishedEvery(ctx, rs, o.retentionAfter, o.retentionInterval, log)
	}
	go sec.RefreshTicketKeys(ctx, srv.Tickets().SetKeys)
	debugAddr := ""
	if o.debugListen != "" {
		debugAddr, err = startDebug(ctx, o.debugListen, log)
		if err != nil {
			node.Kill()
			return err
		}
	}
	// One machine-readable line for scripts and tests that start nodes.
	fmt.Printf("matchd ready member=%s http=%s tcp=%s gossip=%s remote=%s debug=%s metrics=%s\n",
		node.ID(), httpLn.Addr(), tcpAddr, node.GossipAddr(), node.Self(), debugAddr, metricsAddr)
	log.Info("matchd ready", "member", node.ID(), "http", httpLn.Addr().String(), "tcp", tcpAddr,
		"metrics", metricsAddr, "store", storeKind(o), "edge_only", o.edgeOnly, "build", buildVersion())

	if o.demo {
		go func() {
			if err := runDemo(ctx, "http://"+httpLn.Addr().String(), adminToken, sec.AdminTokenAt, o.demoDelay, o.demoExit, log); err != nil {
				errc <- err
			}
		}()
	}

	var runErr error
	select {
	case <-ctx.Done():
	case <-node.Evicted():
		// Peers dropped this member and protoactor never readmits its id:
		// exit so the supervisor restarts the process with a fresh one.
		runErr = errors.New("evicted from the cluster after a false failure detection; restart needed")
	case runErr = <-errc:
		if errors.Is(runErr, errDemoDone) {
			runErr = nil
		}
	}
	draining.Store(true)
	drain(o, srv, hs, node, log)
	// The fenced-write count says whether this member lived on as a stale
	// owner (frozen, partitioned) and was stopped by the store's fence. It
	// is logged once the grains have stopped, since a woken stale activation
	// may try its write while the node drains; the chaos tests read it here
	// because an evicted member exits right after.
	log.Info("matchd grains stopped", "fenced_writes", grainMetrics.FencedWrites())
	return runErr
}

// drain is the graceful stop (docs/operations.md §2): the edge stops taking
// players and tells every client to reconnect elsewhere (edge.Server.Drain),
// then the member leaves the cluster, so peers route its matches elsewhere,
// and its grains stop after their mailboxes: a write in flight either
// commits before the stop or is fenced by the new owner's claim, and its
// intent is retried there. If the whole drain hangs anyway, the process
// exits 5 s after --drain-timeout, since a supervisor waiting for it is
// worse than a crash that fencing already makes safe.
func drain(o options, srv *edge.Server, hs *http.Server, node *cluster.Node, log *slog.Logger) {
	start := time.Now()
	log.Info("matchd draining", "bound", o.drainTimeout)
	watchdog := time.AfterFunc(o.drainTimeout+5*time.Second, func() {
		log.Error("drain did not finish in time; exiting", "bound", o.drainTimeout)
		os.Exit(1)
	})
	defer watchdog.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), o.drainTimeout)
	defer cancel()
	if err := srv.Drain(ctx, hs, o.drainTimeout); err != nil {
		log.Warn("edge drain", "err", err)
	}
	if err := node.Leave(ctx); err != nil {
		log.Warn("leave cluster", "err", err)
	}
	log.Info("matchd drained", "took", time.Since(start).Round(time.Millisecond))
}

func storeKind(o options) string {
	if o.databaseURL != "" {
		return "postgres"
	}
	return "embedded:" + o.dataDir
}

// openStore opens the node's store; statements times the PostgreSQL store's
// group-commit statements.
func openStore(ctx context.Context, o options, log *slog.Logger, statements prometheus.Histogram) (persistence.Store, error) {
	if o.databaseURL != "" {
		opts := []persistence.PostgresOption{persistence.WithLogger(log),
			persistence.WithStatementObserver(func(d time.Duration) { statements.Observe(d.Seconds()) })}
		if o.databaseSchema != "" {
			opts = append(opts, persistence.WithSchema(o.databaseSchema))
		}
		s, err := persistence.OpenPostgres(ctx, o.databaseURL, opts...)
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL store: %w", err)
		}
		return s, nil
	}
	s, err := persistence.OpenEmbeddedWithLogger(o.dataDir, log)
	if err != nil {
		return nil, fmt.Errorf("open embedded store in %s: %w", o.dataDir, err)
	}
	return s, nil
}

func deckInfos() []edge.DeckInfo {
	var out []edge.DeckInfo
	for _, d := range catalog.Decks() {
		out = append(out, edge.DeckInfo{ID: string(d.ID), Name: d.Name, Cards: d.Cards})
	}
	return out
}
