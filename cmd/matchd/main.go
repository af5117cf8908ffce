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
	"syscall"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/clusterkeys"
	"github.com/matchgrain/matchgrain/cmd/matchd/internal/config"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/grains"
	"github.com/matchgrain/matchgrain/internal/governor"
	"github.com/matchgrain/matchgrain/ops"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/web"
)

func main() {
	o, err := config.Parse(os.Args[1:])
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

func newLogger(o config.Options) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.LogLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, hopts)
	if o.JSONLogs {
		h = slog.NewJSONHandler(os.Stderr, hopts)
	}
	l := slog.New(h)
	slog.SetDefault(l.With("node", o.Cluster.NodeName))
	return l
}

// run starts every part of the node, serves until ctx ends, then stops them
// in the order docs/cluster.md §5.3 recommends: stop taking players, leave the
// cluster so peers take the matches over, close the store.
func run(ctx context.Context, o config.Options, base *slog.Logger) error {
	// cluster.Start names the node in its own lines; everything else here
	// gets the name from log.
	log := base.With("node", o.Cluster.NodeName)
	envelope.SetLogger(log)
	// The busy percent holds from the start; the governor, if on, lowers
	// it while the node is quiet.
	governor.SetBusyGC(o.GCBusyPercent)
	gcGovernor := governor.NewGC(governor.GCConfig{BusyPercent: o.GCBusyPercent, QuietPercent: o.GCQuietPercent,
		QuietMaxCycles: governor.GCQuietMaxCycles, MinHeadroom: o.GCMinHeadroom,
		HerdPercent: o.GCHerdPercent, HerdHold: governor.GCHerdHold}, log)
	if gcGovernor != nil {
		gctx, stopGovernor := context.WithCancel(ctx)
		defer stopGovernor()
		go gcGovernor.Run(gctx, governor.GCInterval)
	}
	if g := governor.NewProc(o.ProcGovernor, log); g != nil {
		pctx, stopGovernor := context.WithCancel(ctx)
		defer stopGovernor()
		go g.Run(pctx, governor.ProcSample)
	}
	statements := persistence.NewStatementHistogram()
	storeConfig := persistence.OpenConfig{URL: o.DatabaseURL, Schema: o.DatabaseSchema, TCP: o.DatabaseTCP,
		DataDir: o.DataDir, Logger: log, Statements: statements}
	store, err := persistence.Open(ctx, storeConfig)
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
	identity, err := o.Cluster.Security.Identity(o.Cluster.ClusterName)
	if err != nil {
		return fmt.Errorf("cluster identity: %w", err)
	}
	if err := clusterkeys.CheckIdentity(ctx, store, identity); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}

	var node *cluster.Node
	// gate refuses activations until cluster.Start has returned and from the
	// drain (or an eviction) on.
	var gate cluster.ActivationGate
	var kinds []*pcluster.Kind
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
	if !o.EdgeOnly {
		kind, err := actors.NewMatchKind(actors.GrainDeps{
			Store: store, Rules: actors.GameRules{}, Timing: o.Timing, Logger: log, Metrics: grainMetrics,
			StoreTimeout: o.StoreTimeout, MaxClockSkew: o.MaxClockSkew,
			MaxSpectators: o.Edge.MaxSpectators, SpectatorDelayEvents: o.SpectatorDelayEvents, SpectatorDelay: o.SpectatorDelay,
			Owner: gate.Owner, MayActivate: gate.MayActivate,
			Owns: func(id string) bool { return gate.Owns(actors.MatchKind, id) },
		})
		if err != nil {
			return err
		}
		kinds = append(kinds, kind)
	}
	cc := o.Cluster
	cc.Kinds, cc.Logger = kinds, base
	cc.Info = map[string]string{ops.InfoRules: actors.RulesVersion(actors.GameRules{}), ops.InfoBuild: buildVersion()}
	node, err = cluster.Start(cc)
	if err != nil {
		return fmt.Errorf("start cluster member: %w", err)
	}
	gate.Started(node)
	if gcGovernor != nil { // a herd percent of 0 makes Herd do nothing
		go herdsOf(ctx, node, gcGovernor)
	}
	gw, err := grains.NewGateway(grains.GatewayConfig{
		System: node.System(), Cluster: node, Store: store, Rules: actors.GameRules{}, Timing: o.Timing,
		Forget: func(id string) { node.ForgetPID(id, actors.MatchKind) }, Logger: log,
		// A seat looks for its moved grain at least as long as a player's
		// call waits for it (the gateway's default is 30 s).
		ReattachTimeout: max(30*time.Second, o.Edge.RequestTimeout),
	})
	if err != nil {
		node.Kill()
		return err
	}

	ticketKey, err := hex.DecodeString(o.TicketKey)
	if err != nil {
		node.Kill()
		return fmt.Errorf("ticket-key must be hex: %w", err)
	}
	sec, err := clusterkeys.Load(ctx, clusterkeys.Options{AdminToken: o.AdminToken, TicketKey: ticketKey, DataDir: o.DataDir,
		TicketTTL: o.Edge.TicketTTL, Refresh: o.SecretsRefresh, Rotation: o.TicketKeyRotation, Logger: log}, store)
	if err != nil {
		node.Kill()
		return err
	}
	adminToken := sec.AdminToken
	ec := o.Edge
	ec.TicketKey, ec.TicketPreviousKeys, ec.AdminToken, ec.Decks = sec.TicketKey, sec.TicketAccept, adminToken, grains.DeckInfos
	ec.Logger, ec.Registry, ec.UseOnce, ec.Admitted, ec.Fallback = log, registry, grains.UseOnce(store), node.Admitted, web.Handler()
	opsDeps := ops.Deps{Node: node, Store: store, Rules: actors.GameRules{}, Timing: o.Timing,
		Status: gw.Status, Takeovers: grainMetrics.RecentTakeovers, Logger: log}
	ec.Admin, ec.Replays, ec.Live = ops.Handler(opsDeps), ops.PublicReplays(opsDeps), ops.PublicLive(opsDeps)
	srv, err := edge.New(ec, gw)
	if err != nil {
		node.Kill()
		return err
	}
	httpLn, err := net.Listen("tcp", o.Listen)
	if err != nil {
		node.Kill()
		return fmt.Errorf("listen %s: %w", o.Listen, err)
	}
	hs := srv.HTTPServer()
	errc := make(chan error, 5)
	go func() { errc <- fmt.Errorf("http: %w", hs.Serve(srv.LimitListener(httpLn))) }()
	metricsAddr := httpLn.Addr().String()
	if o.MetricsListen != "" {
		ml, err := net.Listen("tcp", o.MetricsListen)
		if err != nil {
			node.Kill()
			return fmt.Errorf("listen %s: %w", o.MetricsListen, err)
		}
		metricsAddr = ml.Addr().String()
		ms := &http.Server{Handler: srv.MetricsHandler(), ReadHeaderTimeout: o.Edge.HTTPHeaderTimeout,
			ReadTimeout: o.Edge.HTTPReadTimeout, WriteTimeout: o.Edge.HTTPWriteTimeout, IdleTimeout: o.Edge.HTTPIdleTimeout}
		go func() { errc <- fmt.Errorf("metrics http: %w", ms.Serve(ml)) }()
		defer func() { _ = ms.Close() }() // scrapes in flight at exit do not matter
	}
	tcpAddr := ""
	if o.TCPListen != "" {
		tl, err := net.Listen("tcp", o.TCPListen)
		if err != nil {
			node.Kill()
			return fmt.Errorf("listen %s: %w", o.TCPListen, err)
		}
		tcpAddr = tl.Addr().String()
		go func() { errc <- fmt.Errorf("tcp: %w", srv.ServeTCP(tl)) }()
	}
	if !o.EdgeOnly {
		leases := cluster.NewLeases(node, o.ReclaimLease)
		rc, err := cluster.NewReclaimer(node, cluster.ReclaimerConfig{
			Kind: actors.MatchKind, Interval: o.ReclaimInterval,
			List: cluster.ReclaimList(leases, store.ListUnfinished, func(m persistence.MatchInfo) cluster.LeaseRecord {
				return cluster.LeaseRecord{Identity: m.MatchID, Owner: m.Owner, Age: m.Age}
			}),
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
	if rs, ok := store.(persistence.Retention); ok && o.RetentionAfter > 0 {
		go persistence.PruneFinishedEvery(ctx, rs, o.RetentionAfter, o.RetentionInterval, log)
	}
	go sec.RefreshTicketKeys(ctx, srv.Tickets().SetKeys)
	debugAddr := ""
	if o.DebugListen != "" {
		debugAddr, err = startDebug(ctx, o.DebugListen, log)
		if err != nil {
			node.Kill()
			return err
		}
	}
	// One machine-readable line for scripts and tests that start nodes.
	fmt.Printf("matchd ready member=%s http=%s tcp=%s gossip=%s remote=%s debug=%s metrics=%s\n",
		node.ID(), httpLn.Addr(), tcpAddr, node.GossipAddr(), node.Self(), debugAddr, metricsAddr)
	log.Info("matchd ready", "member", node.ID(), "http", httpLn.Addr().String(), "tcp", tcpAddr,
		"metrics", metricsAddr, "store", storeConfig.Kind(), "edge_only", o.EdgeOnly, "build", buildVersion())

	if o.Demo {
		go func() {
			if err := runDemo(ctx, "http://"+httpLn.Addr().String(), adminToken, sec.AdminTokenAt, o.DemoDelay, o.DemoExit, log); err != nil {
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
	gate.Drain()
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
func drain(o config.Options, srv *edge.Server, hs *http.Server, node *cluster.Node, log *slog.Logger) {
	start := time.Now()
	log.Info("matchd draining", "bound", o.DrainTimeout)
	watchdog := time.AfterFunc(o.DrainTimeout+5*time.Second, func() {
		log.Error("drain did not finish in time; exiting", "bound", o.DrainTimeout)
		os.Exit(1)
	})
	defer watchdog.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	if err := srv.Drain(ctx, hs, o.DrainTimeout); err != nil {
		log.Warn("edge drain", "err", err)
	}
	if err := node.Leave(ctx); err != nil {
		log.Warn("leave cluster", "err", err)
	}
	log.Info("matchd drained", "took", time.Since(start).Round(time.Millisecond))
}

// herdsOf tells the GC governor of each member lost until ctx ends: its
// matches come back here all at once.
func herdsOf(ctx context.Context, node *cluster.Node, g *governor.GC) {
	for {
		select {
		case <-node.MemberLost():
			g.Herd()
		case <-ctx.Done():
			return
		}
	}
}
