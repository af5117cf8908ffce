package main

import (
	"context"
	"log/slog"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/client/load"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestChaosFailoverWorkload runs the code of deploy/measure.sh's cluster3
// and failover workloads (load.Run with Cluster, load.RunFailover) at a
// tiny scale on three real members, so that they cannot rot. cluster3: a
// few matches with every session on a member that does not own the match,
// CPU summed over the members. failover: a handful of matches spread over the
// members, SIGKILL of the one that owns the most, every match it owned
// answering again, no acknowledged intent lost (re-sent, each is a
// duplicate), and the summary line in the form scripts read.
func TestChaosFailoverWorkload(t *testing.T) {
	schema := pgtest.NewSchema(t)
	common := []string{
		"--database-url", pgtest.URL(t), "--database-schema", schema,
		"--cluster-name", "herd-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"--seat-keepalive", "200ms", "--reclaim-interval", "2s", "--log-level", "info",
	}
	common = append(common, strings.Fields(os.Getenv("MATCHGRAIN_CHAOS_FLAGS"))...)
	a := startProc(t, "a", common...)
	b := startProc(t, "b", append(common, "--join", a.gossip)...)
	c := startProc(t, "c", append(common, "--join", a.gossip)...)
	procs := []*proc{a, b, c}
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, seeMembers(3, procs...))
	var members []load.FailoverMember
	byPID := map[int]*proc{}
	for _, p := range procs {
		members = append(members, load.FailoverMember{Server: "http://" + p.http, PID: p.cmd.Process.Pid})
		byPID[p.cmd.Process.Pid] = p
	}
	// The cluster workload (deploy/measure.sh cluster3) on the same members
	// first: every session on a member that does not own its match.
	servers := make([]string, len(members))
	for i, m := range members {
		servers[i] = m.Server
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := load.Run(ctx, load.Config{
		Admin: client.NewAdmin(servers[0], testAdminToken, nil), Cluster: servers, Token: testAdminToken, BotSeed: 3,
		Match:   bots.MatchOptions{Decks: [2]string{"S1", "S2"}, Logger: slog.New(slog.DiscardHandler)},
		Matches: 3, Rate: 4, ConnectionRate: 8, Duration: 2 * time.Second,
	})
	if err != nil {
		t.Fatalf("cluster run: %v", err)
	}
	if cl.Intents == 0 || cl.Errors != 0 || len(cl.Members) != 3 || cl.Node == nil || cl.Node.CPUSeconds <= 0 {
		t.Fatalf("cluster run: %d intents, %d errors, %d members' usage, summed %+v", cl.Intents, cl.Errors, len(cl.Members), cl.Node)
	}

	killed := 0
	cfg := load.FailoverConfig{
		Members: members, Token: testAdminToken, BotSeed: 36,
		Match:   bots.MatchOptions{Decks: [2]string{"S1", "S2"}, Logger: slog.New(slog.DiscardHandler)},
		Matches: 6, Rate: 2, Settle: 3 * time.Second, Patience: 45 * time.Second,
		Kill: func(pid int) error {
			killed++
			byPID[pid].kill()
			return nil
		},
	}
	rep, err := load.RunFailover(ctx, cfg)
	if err != nil {
		t.Fatalf("failover run: %v", err)
	}
	var text strings.Builder
	rep.WriteText(&text)
	t.Logf("report:\n%s", text.String())
	if killed != 1 {
		t.Fatalf("%d members killed, want 1", killed)
	}
	most := 0
	for _, n := range rep.Owned {
		most = max(most, n)
	}
	if rep.Affected == 0 || rep.Affected != most || rep.Owned[rep.Victim] != most {
		t.Fatalf("killed %s with %d matches of owners %v, want the member owning the most", rep.Victim, rep.Affected, rep.Owned)
	}
	if rep.Never != 0 || rep.Answered != rep.Affected {
		t.Fatalf("%d of %d affected matches never answered again", rep.Never, rep.Affected)
	}
	if rep.Lost != 0 || rep.Unchecked != 0 {
		t.Fatalf("acknowledged intents: %d lost, %d not checked, of %d", rep.Lost, rep.Unchecked, rep.Affected)
	}
	if rep.FailoverMs.P50 <= 0 || rep.FailoverMs.Max < rep.FailoverMs.P99 || rep.FailoverMs.P99 < rep.FailoverMs.P50 {
		t.Fatalf("failover times out of order: %+v", rep.FailoverMs)
	}
	inPaths := 0
	for _, p := range rep.Paths {
		inPaths += p.Answered
	}
	if inPaths != rep.Answered {
		t.Fatalf("paths %+v hold %d answered matches, want all %d", rep.Paths, inPaths, rep.Answered)
	}
	// The sessions of the matches on the killed member reconnected, each
	// phase timed, and back after the loss was seen; they came back with
	// the resume tickets their lost connections held (a nil ticket phase).
	// At least one session of each: the report is taken once every match
	// has answered, and a match's other session, which had nothing to
	// send, may still be on its way back then.
	reconnected := 0
	for _, p := range rep.Paths {
		if p.Path == load.PathReconnected {
			reconnected = p.Answered
		}
	}
	if rp := rep.Reconnects; reconnected > 0 {
		if rp == nil || rp.Sessions < reconnected || rp.Resumed == 0 || rp.TicketMs.P50 < 0 || rp.DialMs.P50 <= 0 || rp.HelloMs.P50 <= 0 ||
			rp.BackMs.P50 <= rp.LostMs.P50 || rp.BackMs.P99 < rp.BackMs.P50 {
			t.Fatalf("reconnects %+v for %d matches on the killed member; want a session of each at least, with resume tickets, every phase timed",
				rp, reconnected)
		}
	}
	// The survivors' work through the herd, read from their processes.
	if m := rep.Machine; runtime.GOOS == "linux" && (m == nil || m.ServerCores == nil || *m.ServerCores <= 0 || rep.SurvivorCPUMsPerMatch <= 0) {
		t.Fatalf("machine %+v, survivors' CPU per match %.3f ms: want the survivors' CPU through the herd", m, rep.SurvivorCPUMsPerMatch)
	}
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	want := regexp.MustCompile(`^failover: affected=[0-9]+ p50=[0-9]+ms p99=[0-9]+ms max=[0-9]+ms never=[0-9]+ lost=[0-9]+$`)
	if last := lines[len(lines)-1]; !want.MatchString(last) || last != rep.Line() {
		t.Fatalf("last line %q, want the form %s", last, want)
	}
}
