package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
)

// Multi-member tests: every member is a child process (clustertest), so a
// kill is a real SIGKILL and -race sees one member per process.

func inc(t *testing.T, m *clustertest.Member, identity string) Count {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	out, err := m.Call(ctx, cmdInc, identity)
	if err != nil {
		t.Fatalf("inc %s from %s: %v", identity, m.Name, err)
	}
	var c Count
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	return c
}

func owner(t *testing.T, m *clustertest.Member, identity string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := m.Owner(ctx, counterKindName, identity)
	if err != nil {
		t.Fatalf("owner of %s from %s: %v", identity, m.Name, err)
	}
	return addr
}

// identityOwnedBy returns an identity that from's view assigns to addr.
func identityOwnedBy(t *testing.T, from *clustertest.Member, addr, prefix string) string {
	t.Helper()
	for i := range 500 {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if owner(t, from, id) == addr {
			return id
		}
	}
	t.Fatalf("no identity among 500 is owned by %s", addr)
	return ""
}

// TestClusterRouting: three hosting members and one edge-only member; a
// request from any member reaches the identity's owner, and the edge member
// routes but never hosts.
func TestClusterRouting(t *testing.T) {
	relaxed := clustertest.RelaxedFailureDetection()
	all := clustertest.StartClusterWith(t,
		clustertest.MemberOptions{Name: "m0", ClusterName: "routing", FailureDetection: relaxed},
		clustertest.MemberOptions{Name: "m1", ClusterName: "routing", FailureDetection: relaxed},
		clustertest.MemberOptions{Name: "m2", ClusterName: "routing", FailureDetection: relaxed},
		clustertest.MemberOptions{Name: "edge", ClusterName: "routing", FailureDetection: relaxed, EdgeOnly: true},
	)
	ms, edge := all[:3], all[3]

	t.Run("request reaches the owner", func(t *testing.T) {
		for _, target := range ms {
			id := identityOwnedBy(t, ms[0], target.RemoteAddr, "reach")
			for _, from := range all {
				if got := owner(t, from, id); got != target.RemoteAddr {
					t.Fatalf("%s thinks %s is owned by %s, %s thinks %s", from.Name, id, got, ms[0].Name, target.RemoteAddr)
				}
			}
			for i, from := range all {
				c := inc(t, from, id)
				if c.Host != target.RemoteAddr || c.N != i+1 {
					t.Fatalf("inc %d of %s from %s answered %+v; want host %s, count %d (one activation)",
						i+1, id, from.Name, c, target.RemoteAddr, i+1)
				}
			}
		}
	})

	t.Run("edge-only member routes but never hosts", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		view, err := ms[0].Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range view {
			if m.Address == edge.RemoteAddr && slices.Contains(m.Kinds, counterKindName) {
				t.Fatalf("edge member advertises kind %q: %v", counterKindName, m.Kinds)
			}
		}
		for i := range 20 {
			id := fmt.Sprintf("edge-%d", i)
			o := owner(t, edge, id)
			if o == edge.RemoteAddr || o == "" {
				t.Fatalf("%s owned by %q in the edge member's view", id, o)
			}
			if c := inc(t, edge, id); c.Host != o {
				t.Fatalf("%s answered by %s, owner is %s (edge is %s)", id, c.Host, o, edge.RemoteAddr)
			}
		}
	})
}

// TestClusterFailover kills the owner of an active identity several times and
// measures kill → first successful answer from the surviving members; each
// time a fresh member (new ID, sometimes on the killed member's very
// addresses) joins and must host grains again.
func TestClusterFailover(t *testing.T) {
	const kills = 4
	ms := clustertest.StartCluster(t, 3, clustertest.MemberOptions{ClusterName: "failover"})
	issuer := ms[0] // never killed: requests come from here
	var took []time.Duration
	for k := range kills {
		victim := ms[1+k%2]
		// An identity the victim hosts for real: while a loaded machine
		// still settles the views after the last restart, the issuer's
		// owner and the member that answers can differ for a moment, so
		// try fresh identities until one is answered by the victim.
		var id string
		attempt := 0
		clustertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
			id = identityOwnedBy(t, issuer, victim.RemoteAddr, fmt.Sprintf("fo%d.%d", k, attempt))
			attempt++
			if c := inc(t, issuer, id); c.Host != victim.RemoteAddr || c.N < 1 {
				return fmt.Errorf("before kill: %s answered %+v, want host %s", id, c, victim.RemoteAddr)
			}
			return nil
		})

		start := time.Now()
		victim.Kill()
		// Adding 100 tells a fresh activation (a multiple of 100; more than
		// 100 if a retried attempt was delivered twice) from migrated
		// state (101).
		c := inc(t, issuer, id+" 100")
		d := time.Since(start)
		took = append(took, d)
		if c.Host == victim.RemoteAddr || c.N%100 != 0 {
			t.Fatalf("after kill: %s answered %+v; want a fresh activation off %s", id, c, victim.RemoteAddr)
		}
		t.Logf("kill %d: %s answered again after %v by %s (delivered %d time(s))",
			k+1, id, d.Round(time.Millisecond), c.Host, c.N/100)

		// A fresh incarnation replaces the victim; every second one reuses
		// the victim's addresses, as a restarted pod would.
		opts := clustertest.MemberOptions{
			Name: fmt.Sprintf("r%d", k), ClusterName: "failover", Join: []string{issuer.GossipAddr},
		}
		if k%2 == 1 {
			opts.GossipAddr, opts.RemoteAddr = victim.GossipAddr, victim.RemoteAddr
		}
		fresh := clustertest.StartMember(t, opts)
		ms[1+k%2] = fresh
		clustertest.WaitMembers(t, 30*time.Second, 3, ms...)
		rid := identityOwnedBy(t, issuer, fresh.RemoteAddr, fmt.Sprintf("re%d", k))
		if c := inc(t, issuer, rid); c.Host != fresh.RemoteAddr {
			t.Fatalf("rejoined member %s (%s) does not host %s: answered by %s", fresh.Name, fresh.RemoteAddr, rid, c.Host)
		}
	}
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	t.Logf("failover kill→answer over %d kills: median %v, worst %v, all %v",
		len(took), sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), took)
	// Defaults put detection near 2 s; allow for a loaded CI box, but catch a
	// request that waits out a timeout on top of detection (about 6 s).
	if median, worst := sorted[len(sorted)/2], sorted[len(sorted)-1]; median > 4*time.Second || worst > 8*time.Second {
		t.Fatalf("failover median %v (limit 4s), worst %v (limit 8s)", median, worst)
	}
}

func TestClusterGracefulLeaveMovesGrains(t *testing.T) {
	ms := clustertest.StartCluster(t, 3, clustertest.MemberOptions{
		ClusterName: "leave", FailureDetection: clustertest.RelaxedFailureDetection(),
	})
	issuer, leaver := ms[0], ms[1]
	var ids []string
	for i := range 6 {
		ids = append(ids, identityOwnedBy(t, issuer, leaver.RemoteAddr, fmt.Sprintf("lv%d", i)))
	}
	ids = append(ids, identityOwnedBy(t, issuer, ms[2].RemoteAddr, "stay"))

	type outcome struct {
		res loadResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		arg, _ := json.Marshal(loadArgs{Identities: ids, Duration: 6 * time.Second, Timeout: 10 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := issuer.Call(ctx, cmdLoad, string(arg))
		var r loadResult
		if err == nil {
			err = json.Unmarshal([]byte(out), &r)
		}
		done <- outcome{r, err}
	}()

	// The leave must move grains that run: wait until the load has
	// activated every one of them on the leaver.
	clustertest.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		ev := leaver.Events()
		for _, id := range ids[:6] {
			if !slices.Contains(ev, "activated "+id) {
				return fmt.Errorf("%s not active on the leaving member yet", id)
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := leaver.Leave(ctx); err != nil {
		t.Fatalf("leave: %v", err)
	}
	t.Logf("Leave took %v", time.Since(start).Round(time.Millisecond))
	clustertest.WaitMembers(t, 10*time.Second, 2, ms[0], ms[2])

	o := <-done
	if o.err != nil {
		t.Fatalf("load: %v", o.err)
	}
	t.Logf("load during leave: %d ok, %d failed, max latency %v", o.res.OK, o.res.Failed, o.res.MaxLatency)
	if o.res.Failed > 0 {
		t.Fatalf("%d requests failed during a graceful leave: %v", o.res.Failed, o.res.Errors)
	}
	for _, id := range ids {
		if h := o.res.Hosts[id]; h == leaver.RemoteAddr || h == "" {
			t.Fatalf("%s last answered by %q after the leave", id, h)
		}
	}
}

// TestClusterReclaimerWakesOrphans: with no client at all, the grains of a
// killed member are activated again by the survivors' reclaimers.
func TestClusterReclaimerWakesOrphans(t *testing.T) {
	var ids []string
	for i := range 24 {
		ids = append(ids, fmt.Sprintf("orphan-%02d", i))
	}
	// Relaxed failure detection: this test is about the reclaimer, and -race
	// members on a loaded machine are otherwise falsely declared dead while
	// the cluster forms (detection then takes up to about 11 s).
	ms := clustertest.StartCluster(t, 3, clustertest.MemberOptions{
		ClusterName: "reclaim", FailureDetection: clustertest.RelaxedFailureDetection(),
		Env: []string{envReclaim + "=" + strings.Join(ids, ",")},
	})
	victim := ms[2]
	var orphans []string
	for _, id := range ids {
		if owner(t, ms[0], id) == victim.RemoteAddr {
			orphans = append(orphans, id)
		}
	}
	if len(orphans) == 0 {
		t.Fatal("victim owns none of the identities")
	}
	activatedOn := func(m *clustertest.Member, id string, since int) bool {
		return slices.Contains(m.Events()[since:], "activated "+id)
	}
	// Every member wakes its own share at start.
	clustertest.Eventually(t, 15*time.Second, 100*time.Millisecond, func() error {
		for _, id := range orphans {
			if !activatedOn(victim, id, 0) {
				return fmt.Errorf("%s not activated on its owner %s yet", id, victim.Name)
			}
		}
		return nil
	})

	// Survivors may have activated some identities before the views
	// converged at start; only activations after the kill count.
	seen0, seen1 := len(ms[0].Events()), len(ms[1].Events())
	start := time.Now()
	victim.Kill()
	clustertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		for _, id := range orphans {
			if !activatedOn(ms[0], id, seen0) && !activatedOn(ms[1], id, seen1) {
				return fmt.Errorf("orphan %s not reactivated on a survivor", id)
			}
		}
		return nil
	})
	t.Logf("%d orphans reactivated without a client %v after the kill", len(orphans), time.Since(start).Round(time.Millisecond))
}

// TestClusterEvictedMemberKnows freezes a member past the failure detector:
// peers drop it, and once it runs again it learns it was declared dead.
func TestClusterEvictedMemberKnows(t *testing.T) {
	ms := clustertest.StartCluster(t, 3, clustertest.MemberOptions{ClusterName: "evict"})
	frozen := ms[2]
	if err := frozen.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	clustertest.WaitMembers(t, 15*time.Second, 2, ms[0], ms[1])
	if err := frozen.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	clustertest.Eventually(t, 15*time.Second, 50*time.Millisecond, func() error {
		if !slices.Contains(frozen.Events(), clustertest.EventEvicted) {
			return fmt.Errorf("%s did not report eviction", frozen.Name)
		}
		return nil
	})
	t.Logf("resumed member learned of its eviction after %v", time.Since(resumed).Round(time.Millisecond))
	// memberlist readmits the refuting member, protoactor never readmits its
	// ID: across a few republish ticks the survivors keep seeing two members.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		for _, m := range ms[:2] {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			view, err := m.Members(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if len(view) != 2 {
				t.Fatalf("%s readmitted the evicted member: %v", m.Name, view)
			}
		}
	}
}

const envStartFailure = "CLUSTER_TEST_START_FAILURE" // "gossip=addr" or "remote=addr"

// TestHelperStartFailure starts a member on an address the parent holds and
// reports Start's error instead of crashing.
func TestHelperStartFailure(t *testing.T) {
	if !clustertest.IsChild() {
		t.Skip("helper process for TestClusterStartFailsCleanly")
	}
	cfg := cluster.Config{GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0", ClusterName: "fail"}
	which, addr, _ := strings.Cut(os.Getenv(envStartFailure), "=")
	if which == "gossip" {
		cfg.GossipAddr = addr
	} else {
		cfg.RemoteAddr = addr
	}
	msg := "<nil>"
	if _, err := cluster.Start(cfg); err != nil {
		msg = err.Error()
	}
	clustertest.Serve(map[string]string{"err": msg}, nil)
}

// TestClusterStartFailsCleanly: protoactor panics when it cannot listen;
// Start must turn that into an error.
func TestClusterStartFailsCleanly(t *testing.T) {
	tests := []struct {
		which, want string
	}{
		{"gossip", "memberlist"},
		{"remote", "failed to listen"},
	}
	for _, tt := range tests {
		t.Run(tt.which, func(t *testing.T) {
			addr := clustertest.FreeAddr(t)
			tcp, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer tcp.Close()
			udp, err := net.ListenPacket("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer udp.Close()
			child := clustertest.StartChild(t, clustertest.ChildOptions{
				Name: "fail-" + tt.which, TestName: "TestHelperStartFailure",
				Env: []string{envStartFailure + "=" + tt.which + "=" + addr},
			})
			t.Logf("Start error: %s", child.Ready["err"])
			if got := child.Ready["err"]; !strings.Contains(got, tt.want) || !strings.HasPrefix(got, "cluster: start member") {
				t.Fatalf("Start error %q, want one mentioning %q", got, tt.want)
			}
		})
	}
}
