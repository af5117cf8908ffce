package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/edge/grains/grainstest"
)

// These tests play edgetest's toy game through a real edge server (and, where
// the bots need the real game's Decision events, real match grains).

// startServer is a real edge in front of edgetest's toy game.
func startServer(t *testing.T) *edgetest.Server { return edgetest.Start(t, edgetest.NewMatches(), nil) }

// config is a run against srv with edgetest's decks and token, then mod.
func config(srv *edgetest.Server, mod func(*Config)) Config {
	c := Config{
		Admin: client.NewAdmin(srv.HTTPURL, edgetest.AdminToken, nil),
		Match: bots.MatchOptions{GameAddr: srv.WSURL, Decks: [2]string{"S1", "S2"}, Timeout: time.Minute,
			Logger: slog.New(slog.DiscardHandler)},
		BotSeed: 1, ConnectionRate: bots.DefaultConnectionRate, MetricsURL: "off",
	}
	mod(&c)
	return c
}

// run runs c within a minute and fails the test on an error.
func run(t *testing.T, c Config) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Run(ctx, c)
	if err != nil {
		t.Fatalf("run: %v (report %+v)", err, r)
	}
	return r
}

// processMetrics serves the two process gauges; every scrape adds 1 s of
// CPU and 1 MiB of RSS, so the tool's arithmetic can be checked.
func processMetrics(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		fmt.Fprintf(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %d\n"+
			"process_resident_memory_bytes %d\nother_metric{a=\"b\"} 1\n", i, (100+i)<<20)
	}))
	t.Cleanup(hs.Close)
	return hs, &n
}

// serverMetrics is processMetrics with the node's latency histograms and
// system calls: every scrape adds 100 intents of 5 ms on average (40 within
// 2 ms, 90 within 5 ms, 98 within 10 ms, all within 20 ms), 2 appends of
// 4 ms (between 2 and 5 ms), 1 statement of 3 ms (between 1 and 3 ms), 700
// reads and 300 writes.
func serverMetrics(t *testing.T) *httptest.Server {
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := float64(n.Add(1))
		fmt.Fprintf(w, "process_cpu_seconds_total %g\nprocess_resident_memory_bytes %g\n", i, (100+i)*(1<<20))
		fmt.Fprintf(w, "matchgrain_process_read_syscalls_total %g\nmatchgrain_process_write_syscalls_total %g\n", 700*i, 300*i)
		type bucket struct{ le, count float64 }
		for _, h := range []struct {
			name       string
			count, sum float64
			buckets    []bucket
		}{
			{"matchgrain_edge_intent_duration_seconds", 100, 0.5, []bucket{{0.001, 0}, {0.002, 40}, {0.005, 90}, {0.01, 98}, {0.02, 100}}},
			{"matchgrain_store_append_duration_seconds", 2, 0.008, []bucket{{0.002, 0}, {0.005, 2}}},
			{"matchgrain_store_statement_duration_seconds", 1, 0.003, []bucket{{0.001, 0}, {0.003, 1}}},
		} {
			fmt.Fprintf(w, "# TYPE %s histogram\n", h.name)
			for _, b := range h.buckets {
				fmt.Fprintf(w, "%s_bucket{le=\"%g\"} %g\n", h.name, b.le, i*b.count)
			}
			fmt.Fprintf(w, "%[1]s_bucket{le=\"+Inf\"} %[2]g\n%[1]s_sum %[3]g\n%[1]s_count %[2]g\n", h.name, i*h.count, i*h.sum)
		}
	}))
	t.Cleanup(hs.Close)
	return hs
}

// TestLoadServerTimes: the report carries the node's mean intent, append
// and statement times over the window, from the histograms' sums and counts.
func TestLoadServerTimes(t *testing.T) {
	metrics := serverMetrics(t)
	r := run(t, config(startServer(t), func(c *Config) {
		c.Matches, c.Rate, c.Warmup, c.Duration, c.MetricsURL = 1, 5, time.Second, 2*time.Second, metrics.URL
	}))
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if r.Machine != nil && r.Machine.DatabaseCores != nil {
		t.Errorf("a database share (%v cores) without --database-pid", *r.Machine.DatabaseCores)
	}
	if r.Node == nil || r.Node.ServerMs == nil || !near(r.Node.ServerMs.Intent, 5) || !near(r.Node.ServerMs.Append, 4) ||
		!near(r.Node.ServerMs.Statement, 3) {
		t.Fatalf("node usage %+v, server times %+v, want 5, 4 and 3 ms", r.Node, r.Node.ServerMs)
	}
	// The 50th of each 100 is the 10th of the 50 between 2 and 5 ms; the
	// 99th the first of the 2 between 10 and 20 ms.
	if sm := r.Node.ServerMs; !near(sm.IntentP50, 2.6) || !near(sm.IntentP99, 15) {
		t.Errorf("intent p50 %v, p99 %v, want 2.6 and 15 ms", sm.IntentP50, sm.IntentP99)
	}
	// The append's p99 is 99 % of the way through its one bucket between 2
	// and 5 ms, the statement's through its bucket between 1 and 3 ms.
	if sm := r.Node.ServerMs; !near(sm.AppendP99, 4.97) || !near(sm.StatementP99, 2.98) {
		t.Errorf("append p99 %v, statement p99 %v, want 4.97 and 2.98 ms", sm.AppendP99, sm.StatementP99)
	}
	// The window's system calls are whole scrapes' worth (700 reads and
	// 300 writes each), divided by the window's intents.
	reads, writes := r.Node.ReadCallsPerIntent*float64(r.Intents), r.Node.WriteCallsPerIntent*float64(r.Intents)
	if scrapes := math.Round(reads / 700); scrapes < 1 || !near(reads, 700*scrapes) || !near(writes, 300*scrapes) {
		t.Errorf("%v reads and %v writes per intent over %d intents, want 700 and 300 per scrape",
			r.Node.ReadCallsPerIntent, r.Node.WriteCallsPerIntent, r.Intents)
	}
}

// TestQuantile: the estimate within a bucket, in the first and in the +Inf
// bucket, and none without observations or with buckets that differ.
func TestQuantile(t *testing.T) {
	at := func(counts ...float64) []bucketCount {
		les := []float64{0.001, 0.002, 0.005, math.Inf(1)}
		out := make([]bucketCount, len(counts))
		for i, c := range counts {
			out[i] = bucketCount{le: les[i], count: c}
		}
		return out
	}
	start := at(10, 20, 30, 40)
	for _, tc := range []struct {
		name string
		q    float64
		end  []bucketCount
		want float64
		ok   bool
	}{
		{"first bucket", 0.5, at(20, 30, 40, 50), 0.0005, true},
		{"within a bucket", 0.5, at(10, 20, 50, 60), 0.002 + 0.003*0.5, true},
		{"+Inf bucket: the highest finite bound", 0.99, at(10, 20, 30, 50), 0.005, true},
		{"no observations", 0.5, at(10, 20, 30, 40), 0, false},
		{"buckets that differ", 0.5, at(10, 20, 30), 0, false},
	} {
		got, ok := quantile(tc.q, start, tc.end)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: quantile(%v) = %v, %v; want %v, %v", tc.name, tc.q, got, ok, tc.want, tc.ok)
		}
	}
}

// TestLoadOpenLoop runs the open loop against a real edge with the toy game:
// ticks are offered at the rate, every tick is accounted for, and the JSON
// report carries the percentiles and the node's usage.
func TestLoadOpenLoop(t *testing.T) {
	metrics, _ := processMetrics(t)
	var progress bytes.Buffer
	r := run(t, config(startServer(t), func(c *Config) {
		c.Matches, c.Rate, c.Warmup, c.Duration, c.MetricsURL = 3, 5, time.Second, 3*time.Second, metrics.URL
		c.Progress = &progress
	}))
	errOut := progress.String()
	t.Logf("%+v\nprogress:\n%s", r, errOut)
	if r.Mode != "open" || r.RatePerMatch != 5 || r.Matches != 3 || r.MeasuredSeconds < 2.9 || r.MeasuredSeconds > 3.5 {
		t.Errorf("report header: %+v", r)
	}
	// 3 matches × 5/s × 3 s = 45 ticks, give or take a tick per match at the edges.
	if r.Ticks < 39 || r.Ticks > 51 {
		t.Errorf("%d ticks, want about 45", r.Ticks)
	}
	if r.Intents == 0 || r.Intents > r.Ticks-r.SkippedTicks+3 {
		t.Errorf("%d intents for %d ticks of which %d skipped", r.Intents, r.Ticks, r.SkippedTicks)
	}
	if r.LatencyMs.P50 <= 0 || r.LatencyMs.P50 > r.LatencyMs.P90 || r.LatencyMs.P90 > r.LatencyMs.P99 || r.LatencyMs.P99 > r.LatencyMs.Max {
		t.Errorf("latency percentiles out of order: %+v", r.LatencyMs)
	}
	if r.Errors != 0 || r.Node == nil || r.Node.CPUSeconds < 2 || r.Node.PeakRSSBytes <= r.Node.RSSBytesAtStart {
		t.Errorf("errors %d, node %+v", r.Errors, r.Node)
	}
	if r.Node != nil && r.Node.ServerMs != nil {
		t.Errorf("server times %+v from a node that exports no latency histograms", r.Node.ServerMs)
	}
	if r.Node != nil && (r.Node.ReadCallsPerIntent != 0 || r.Node.WriteCallsPerIntent != 0) {
		t.Errorf("system calls %+v from a node that exports none", r.Node)
	}
	if runtime.GOOS == "linux" {
		// The machine's CPU over the window: this test's own work at least
		// (the load generator is this process), never more than every core.
		m := r.Machine
		if m == nil || m.CPUs < 1 || m.LoadGeneratorCores <= 0 || m.BusyCores <= 0 || m.BusyCores > float64(m.CPUs)+0.05 {
			t.Errorf("machine usage %+v", m)
		}
	}
	if !strings.Contains(errOut, "measuring matches running 3") {
		t.Errorf("no progress line:\n%s", errOut)
	}
}

// TestLoadSlowOpenLoop paces matches slower than a bot's stall check used
// to allow (one tick every 2.5 s): the bots must wait for the ticks without
// asking for snapshots, which would otherwise outnumber the intents at
// card-game paces and be measured as the server's work.
func TestLoadSlowOpenLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("plays matches against a cluster member; skipped with -short")
	}
	// The real rules engine: its Decision events let bots play from events
	// (the edge's fake engine has none, so its bots ask for a snapshot
	// after every batch).
	r := run(t, config(grainstest.StartEdge(t, grainstest.Options{}), func(c *Config) {
		c.Matches, c.Rate, c.Warmup, c.Duration = 2, 0.4, time.Second, 6*time.Second
	}))
	// 2 matches × 0.4/s × 6 s ≈ 5 ticks; the window sees some intents.
	if r.Intents == 0 || r.Errors != 0 {
		t.Fatalf("%d intents, %d errors: %+v", r.Intents, r.Errors, r)
	}
	if r.SnapshotsAsked != 0 {
		t.Errorf("bots asked for %d snapshots in %d intents of a slow open loop, want none", r.SnapshotsAsked, r.Intents)
	}
}

// TestLoadSpectators: real grains with spectators on; a match played to
// the end, followed by three spectators who take in every batch and
// must see the match's last event (a match fails otherwise).
func TestLoadSpectators(t *testing.T) {
	if testing.Short() {
		t.Skip("plays matches against a cluster member; skipped with -short")
	}
	m, _ := grainstest.NewMatches(t, grainstest.Options{MaxSpectators: 3})
	srv := edgetest.Start(t, m, func(c *edge.Config) { c.MaxSpectators = 3 })
	r := run(t, config(srv, func(c *Config) { c.Matches, c.Spectators = 1, 3 }))
	// A match has dozens of batches: every spectator gets its first
	// snapshot and then most batches on their own.
	if r.MatchesFinished != 1 || r.Spectators != 3 || r.SpectatorFrames < 3*10 {
		t.Fatalf("%d matches finished, %d spectators each took in %d frames in all: %+v", r.MatchesFinished, r.Spectators, r.SpectatorFrames, r)
	}
	var text bytes.Buffer
	r.WriteText(&text)
	if !strings.Contains(text.String(), "spectators: 3 per match") {
		t.Errorf("the text report does not name the spectators:\n%s", text.String())
	}

}

// TestLoadIdle holds real sessions on a real edge and checks the report.
func TestLoadIdle(t *testing.T) {
	srv := startServer(t)
	metrics, _ := processMetrics(t)
	r, err := RunIdle(context.Background(), IdleConfig{Admin: client.NewAdmin(srv.HTTPURL, edgetest.AdminToken, nil),
		GameAddr: srv.WSURL, Decks: [2]string{"S1", "S2"}, Sessions: 6, Hold: time.Second, MetricsURL: metrics.URL})
	if err != nil {
		t.Fatalf("idle run: %v", err)
	}
	if r.Sessions != 6 || r.Connected != 6 || r.Dropped != 0 || r.RSSBytesHeld <= r.RSSBytesBefore ||
		r.RSSBytesPerConn != (r.RSSBytesHeld-r.RSSBytesBefore)/6 {
		t.Errorf("idle report: %+v", r)
	}
}

// TestLoadIdleSourceAddrs: sessions spread over the given source
// addresses, seen by the edge as that many clients. The edge allows 2
// connections per address and the 6 sessions have 3 addresses: on one
// address 4 of them would be refused. The admin calls come from 127.0.0.1
// over at most 2 connections.
func TestLoadIdleSourceAddrs(t *testing.T) {
	srv := edgetest.Start(t, edgetest.NewMatches(), func(c *edge.Config) { c.MaxConnectionsPerAddress = 2 })
	metrics, _ := processMetrics(t)
	admin := client.NewAdmin(srv.HTTPURL, edgetest.AdminToken, &http.Client{Transport: &http.Transport{MaxConnsPerHost: 2}})
	c := IdleConfig{Admin: admin, GameAddr: srv.WSURL, Decks: [2]string{"S1", "S2"}, Sessions: 6, Hold: 100 * time.Millisecond, MetricsURL: metrics.URL,
		SourceAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.4")}}
	r, err := RunIdle(context.Background(), c)
	if err != nil || r.Connected != 6 || r.Dropped != 0 {
		t.Fatalf("idle run over 3 source addresses: %v (report %+v)", err, r)
	}
	c.SourceAddrs = c.SourceAddrs[:1]
	if r, err := RunIdle(context.Background(), c); err == nil || r.Connected != 2 {
		t.Errorf("idle run of 6 sessions from one address allowed 2: %v (report %+v)", err, r)
	}
}

// TestLoadWithoutProcessMetrics: the idle run needs the node's memory, and
// says so when its metrics cannot be read.
func TestLoadWithoutProcessMetrics(t *testing.T) {
	srv := startServer(t)
	_, err := RunIdle(context.Background(), IdleConfig{Admin: client.NewAdmin(srv.HTTPURL, edgetest.AdminToken, nil),
		GameAddr: srv.WSURL, Decks: [2]string{"S1", "S2"}, Sessions: 2, Hold: time.Second, MetricsURL: srv.HTTPURL + "/nothing"})
	if err == nil || !strings.Contains(err.Error(), "process metrics") {
		t.Errorf("idle run without process metrics: %v", err)
	}
}

// TestLoadConnectionRate checks the per-connection cap of the closed loop:
// capped bots stay under it (and so are never rate limited), uncapped bots
// against a node that allows more go faster than the cap allows.
func TestLoadConnectionRate(t *testing.T) {
	srv := edgetest.Start(t, edgetest.NewMatches(), func(c *edge.Config) {
		c.IntentsPerSecond, c.IntentBurst = 1000, 1000
	})
	load := func(connRate float64) *Report {
		t.Helper()
		r := run(t, config(srv, func(c *Config) {
			c.Matches, c.Warmup, c.Duration, c.ConnectionRate = 2, 500*time.Millisecond, 2*time.Second, connRate
		}))
		t.Logf("connection rate %g: %.0f intents/s, %d rejected", connRate, r.IntentsPerSec, r.Rejected)
		return r
	}
	// 2 matches × 2 bots × 4/s is the most the capped run may send (a
	// quarter more for intents sent just before the window opened); the
	// uncapped run must go well past that.
	const most = 2 * 2 * 4 * 1.25
	capped := load(4)
	if capped.ConnectionRate != 4 || capped.IntentsPerSec > most || capped.Intents == 0 || capped.Rejected != 0 {
		t.Errorf("capped at 4/s per connection: %+v", capped)
	}
	free := load(0)
	if free.ConnectionRate != 0 || free.IntentsPerSec <= 4*most || free.Rejected != 0 {
		t.Errorf("uncapped: %+v", free)
	}
}

// TestConfigValidate: every inconsistent configuration is refused with
// ErrConfig and a message naming the flag, before anything runs.
func TestConfigValidate(t *testing.T) {
	admin := client.NewAdmin("http://127.0.0.1:1", "t", nil)
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		flag string
	}{
		{"no matches", func(c *Config) { c.Matches = 0 }, "--matches"},
		{"rate without duration", func(c *Config) { c.Rate = 2 }, "--rate"},
		{"rate above the connection rate", func(c *Config) { c.Rate, c.Duration, c.ConnectionRate = 5, time.Second, 4 }, "--rate"},
		{"warm-up without duration", func(c *Config) { c.Warmup = time.Second }, "--warmup"},
		{"negative connection rate", func(c *Config) { c.ConnectionRate = -1 }, "--connection-rate"},
		{"negative database pid", func(c *Config) { c.DatabasePID = -1 }, "--database-pid"},
		{"negative spectators", func(c *Config) { c.Spectators = -1 }, "--spectators"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Admin: admin, Matches: 1}
			tc.mod(&c)
			r, err := Run(context.Background(), c)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.flag) || r != nil {
				t.Fatalf("Run = %v, %v; want ErrConfig naming %s", r, err, tc.flag)
			}
		})
	}
	c := Config{Admin: admin, Matches: 4, Concurrency: 9}
	if err := c.Validate(); err != nil || c.Concurrency != 4 {
		t.Errorf("concurrency above matches: %v, concurrency %d, want 4", err, c.Concurrency)
	}
	for _, n := range []int{0, 3, -2} {
		ic := IdleConfig{Admin: admin, Sessions: n}
		if err := ic.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%d idle sessions: %v, want ErrConfig", n, err)
		}
	}
}

// TestFailoverTransportMovesOnFromEndedConnections: a ticket request whose
// connection to a member ends without an answer (a kept-alive connection
// to a killed member) goes to the next member, as one that cannot be
// dialled does; a match's creation is not sent twice; once the member is
// known killed, nothing is sent to it.
func TestFailoverTransportMovesOnFromEndedConnections(t *testing.T) {
	// dead answers nothing: each connection is closed once a request came,
	// as the kernel closes a killed process's sockets.
	var deadHits atomic.Int64
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		deadHits.Add(1)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.Close()
	}))
	defer dead.Close()
	var live atomic.Int64
	alive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		live.Add(1)
		_, _ = io.WriteString(w, `{}`)
	}))
	defer alive.Close()
	var killed atomic.Int32
	killed.Store(-1) // not known to be dead: the transport tries it first
	hc := &http.Client{Timeout: 10 * time.Second,
		Transport: failoverTransport([]FailoverMember{{Server: dead.URL}, {Server: alive.URL}}, 0, &killed)}

	resp, err := hc.Post(dead.URL+"/api/game/tickets", "application/json", strings.NewReader(`{"matchId":"m","seat":0}`))
	if err != nil {
		t.Fatalf("ticket with the first member's connection ended: %v; want the next member's answer", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || live.Load() != 1 {
		t.Fatalf("ticket: status %d, %d requests to the live member; want 200 from it", resp.StatusCode, live.Load())
	}
	if resp, err := hc.Post(dead.URL+"/api/matches", "application/json", strings.NewReader(`{}`)); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("a match's creation with its connection ended answered %d; want the error, not a second match", resp.StatusCode)
	}
	if n := live.Load(); n != 1 {
		t.Fatalf("%d requests reached the live member; a match's creation must not be repeated", n)
	}

	// Once the tool has killed the first member, requests skip it.
	killed.Store(0)
	before := deadHits.Load()
	resp, err = hc.Post(dead.URL+"/api/game/tickets", "application/json", strings.NewReader(`{"matchId":"m","seat":0}`))
	if err != nil {
		t.Fatalf("ticket after the kill: %v", err)
	}
	_ = resp.Body.Close()
	if d := deadHits.Load() - before; d != 0 || live.Load() != 2 {
		t.Fatalf("ticket after the kill: %d requests to the killed member, %d to the live one in all; want 0 and 2", d, live.Load())
	}
}

// TestFailoverPaths: the answered matches are split by the way back their
// players took, each path with its own percentiles; a match that never
// answered counts in none.
func TestFailoverPaths(t *testing.T) {
	ids := []string{"m0", "m1", "m2"} // member 1 is the victim
	slot := func(member int, ms int) *failoverSlot {
		return &failoverSlot{member: member, answered: time.Duration(ms) * time.Millisecond}
	}
	affected := []*failoverSlot{
		slot(1, 3000), slot(1, 3200), // sessions on the victim
		slot(0, 900), slot(2, 1100), // grain came to their member
		slot(0, 2000), // grain went to member 2
		slot(2, 0),    // never answered
	}
	owners := []string{"m0", "m2", "m0", "m2", "m2", "m0"}
	got := failoverPaths(affected, owners, ids, 1)
	want := []FailoverPath{
		{Path: PathSameMember, Answered: 2, P50: 900, P99: 1100},
		{Path: PathAcross, Answered: 1, P50: 2000, P99: 2000},
		{Path: PathReconnected, Answered: 2, P50: 3000, P99: 3200},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paths\n%+v\nwant\n%+v", got, want)
	}
}

// TestReconnectPhases: the reconnects of the affected matches after the
// kill, each phase's p50 and p99; one seen before the kill counts in none,
// and one that took more than one attempt is counted as retried.
func TestReconnectPhases(t *testing.T) {
	kill := time.Unix(1000, 0)
	at := func(ms int) time.Time { return kill.Add(time.Duration(ms) * time.Millisecond) }
	rc := func(lost, back, ticket, attempts int) client.Reconnect {
		return client.Reconnect{Lost: at(lost), Done: at(back), Attempts: attempts,
			Ticket: time.Duration(ticket) * time.Millisecond, Dial: 10 * time.Millisecond, Hello: 20 * time.Millisecond}
	}
	resumed := func(r client.Reconnect) client.Reconnect { r.ResumeTicket = true; return r }
	if got := reconnectPhases([]*failoverSlot{{}}, kill); got != nil {
		t.Fatalf("no reconnects: %+v, want nil", got)
	}
	affected := []*failoverSlot{
		{reconnects: []client.Reconnect{rc(100, 1000, 500, 1), resumed(rc(200, 1200, 700, 1))}},
		{reconnects: []client.Reconnect{rc(-50, 300, 100, 1), rc(300, 3000, 900, 2)}},
	}
	got := reconnectPhases(affected, kill)
	want := &ReconnectPhases{Sessions: 3, Retried: 1, Resumed: 1,
		LostMs: MsSpread{200, 300}, TicketMs: MsSpread{700, 900}, DialMs: MsSpread{10, 10},
		HelloMs: MsSpread{20, 20}, BackMs: MsSpread{1200, 3000}}
	if *got != *want {
		t.Fatalf("phases\n%+v\nwant\n%+v", *got, *want)
	}
}
