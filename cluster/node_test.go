package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// In-process tests with a single member: pure logic only (docs/cluster.md §6:
// several members in one process race under -race).

const (
	slowKindName    = "slow"
	failingKindName = "failing"
)

// slowGrain answers Get after slowDelay, tracking how many answer at once.
var (
	slowDelay    = 30 * time.Millisecond
	slowInFlight atomic.Int64
	slowMaxSeen  atomic.Int64
)

func slowKind() *pcluster.Kind {
	return pcluster.NewKind(slowKindName, actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*envelope.Msg); ok {
			if _, ok := m.V.(*Get); ok {
				n := slowInFlight.Add(1)
				for {
					seen := slowMaxSeen.Load()
					if n <= seen || slowMaxSeen.CompareAndSwap(seen, n) {
						break
					}
				}
				time.Sleep(slowDelay)
				slowInFlight.Add(-1)
				ctx.Respond(envelope.Wrap(&Count{Host: ctx.ActorSystem().Address()}))
			}
		}
	}))
}

// failingKind answers every request with the GrainErrorResponse whose
// reason is the identity.
func failingKind(attempts *atomic.Int64) *pcluster.Kind {
	return pcluster.NewKind(failingKindName, actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*envelope.Msg); ok {
			attempts.Add(1)
			ctx.Respond(pcluster.NewGrainErrorResponse(pcluster.GetClusterIdentity(ctx).Identity, "as asked"))
		}
	}))
}

func TestNodeSingleMember(t *testing.T) {
	acts := &activations{n: map[string]int{}}
	onActivate = acts.add
	var failingAttempts atomic.Int64

	node, err := cluster.Start(cluster.Config{
		NodeName:       "solo",
		GossipAddr:     "127.0.0.1:0",
		RemoteAddr:     "127.0.0.1:0",
		ClusterName:    "solo",
		Kinds:          []*pcluster.Kind{counterKind(), slowKind(), failingKind(&failingAttempts)},
		RequestTimeout: time.Second,
		Retry:          cluster.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond},
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Kill()

	t.Run("topology", func(t *testing.T) {
		ms := node.Members()
		if len(ms) != 1 || ms[0].Address != node.Self() || ms[0].ID != node.ID() {
			t.Fatalf("Members() = %+v, want only self %s %s", ms, node.ID(), node.Self())
		}
		if o := node.OwnerAddress("x", counterKindName); o != node.Self() {
			t.Fatalf("OwnerAddress = %q, want self %q", o, node.Self())
		}
		if o := node.OwnerAddress("x", "no-such-kind"); o != "" {
			t.Fatalf("OwnerAddress for a kind nobody hosts = %q, want empty", o)
		}
	})

	t.Run("request", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for want := 1; want <= 3; want++ {
			v, err := node.Request(ctx, "req", counterKindName, &Inc{By: 1})
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := v.(*Count); !ok || c.N != want || c.Host != node.Self() {
				t.Fatalf("reply %#v, want Count{N: %d, Host: %s}", v, want, node.Self())
			}
		}
		if n := acts.count("req"); n != 1 {
			t.Fatalf("%d activations, want 1", n)
		}
	})

	// A cached PID on this member takes Request's local path; a stale one
	// (its activation stopped) must answer with a dead letter, be dropped
	// from the cache and the request re-activate the grain.
	t.Run("stale local PID", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pid, ok := node.Cluster().PidCache.Get("req", counterKindName)
		if !ok || pid.Address != node.Self() {
			t.Fatalf("cached PID %v (found %v), want one on %s", pid, ok, node.Self())
		}
		if err := node.System().Root.StopFuture(pid).Wait(); err != nil {
			t.Fatal(err)
		}
		node.Cluster().PidCache.Set("req", counterKindName, pid) // as if the removal had not happened yet
		v, err := node.Request(ctx, "req", counterKindName, &Get{})
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := v.(*Count); !ok || c.N != 0 {
			t.Fatalf("reply %#v, want a fresh counter", v)
		}
		if n := acts.count("req"); n != 2 {
			t.Fatalf("%d activations, want 2", n)
		}
	})

	// The local path waits on ctx too: a caller that gives up is not held
	// for the attempt's timeout.
	t.Run("local wait ends with ctx", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := node.Request(ctx, "slow", slowKindName, &Get{}); err != nil {
			t.Fatal(err) // activates and caches the PID
		}
		short, cancel2 := context.WithTimeout(context.Background(), slowDelay/6)
		defer cancel2()
		_, err := node.Request(short, "slow", slowKindName, &Get{})
		if !errors.Is(err, cluster.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Request = %v, want ErrUnavailable and DeadlineExceeded", err)
		}
		time.Sleep(2 * slowDelay) // let the slow grain finish its answer
	})

	// attemptLocal's reply processes live in the node's own table, not in
	// protoactor's registry (whose 32,768 shard maps each keep a slot group
	// once any id hashed there); a reply that comes after its request gave
	// up is dropped, and the table is empty again once requests are over.
	t.Run("local replies stay out of the registry", func(t *testing.T) {
		registered := func() int {
			n := 0
			for _, m := range node.System().ProcessRegistry.LocalPIDs.LocalPIDs {
				n += m.Count()
			}
			return n
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := node.Request(ctx, "slow", slowKindName, &Get{}); err != nil {
			t.Fatal(err)
		}
		before := registered()
		done := make(chan error, 1)
		go func() {
			_, err := node.Request(ctx, "slow", slowKindName, &Get{})
			done <- err
		}()
		for slowInFlight.Load() == 0 {
			select {
			case err := <-done:
				t.Fatalf("the slow request ended before it was seen in flight: %v", err)
			case <-ctx.Done():
				t.Fatal("the slow request never reached its grain")
			case <-time.After(time.Millisecond):
			}
		}
		inFlight, during := node.RepliesInFlight(), registered()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if during != before || inFlight != 1 {
			t.Fatalf("during a local request: %d registered processes (before %d), %d in the reply table; want the reply only in the table",
				during, before, inFlight)
		}
		short, cancel2 := context.WithTimeout(context.Background(), slowDelay/6)
		defer cancel2()
		if _, err := node.Request(short, "slow", slowKindName, &Get{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("short request = %v, want DeadlineExceeded", err)
		}
		for slowInFlight.Load() != 0 { // the late answer is sent, to nobody
			if ctx.Err() != nil {
				t.Fatal("the slow grain did not finish")
			}
			time.Sleep(time.Millisecond)
		}
		v, err := node.Request(ctx, "slow", slowKindName, &Get{})
		if c, ok := v.(*Count); err != nil || !ok || c.Host != node.Self() {
			t.Fatalf("request after a late reply: %#v, %v", v, err)
		}
		if n := node.RepliesInFlight(); n != 0 {
			t.Fatalf("%d reply processes left after every request ended", n)
		}
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name     string
			identity string
			kind     string
			msg      any
			timeout  time.Duration
			check    func(error) error
		}{
			{"unregistered type", "x", counterKindName, struct{ A int }{1}, time.Second, func(err error) error {
				if !errors.Is(err, cluster.ErrNotSerializable) {
					return fmt.Errorf("want ErrNotSerializable")
				}
				return nil
			}},
			{"no member hosts the kind", "x", "no-such-kind", &Get{}, 200 * time.Millisecond, func(err error) error {
				if !errors.Is(err, cluster.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("want ErrUnavailable and DeadlineExceeded")
				}
				return nil
			}},
			{"grain error is returned", pcluster.ErrorReason_NOT_FOUND, failingKindName, &Get{}, time.Second, func(err error) error {
				var ge *pcluster.GrainErrorResponse
				if !errors.As(err, &ge) || ge.Reason != pcluster.ErrorReason_NOT_FOUND {
					return fmt.Errorf("want GrainErrorResponse NOT_FOUND")
				}
				return nil
			}},
			{"UNAVAILABLE is retried", pcluster.ErrorReason_UNAVAILABLE, failingKindName, &Get{}, 300 * time.Millisecond, func(err error) error {
				if !errors.Is(err, cluster.ErrUnavailable) {
					return fmt.Errorf("want ErrUnavailable after retries")
				}
				if n := failingAttempts.Load(); n < 3 {
					return fmt.Errorf("only %d attempts reached the grain", n)
				}
				return nil
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				failingAttempts.Store(0)
				ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
				defer cancel()
				v, err := node.Request(ctx, tt.identity, tt.kind, tt.msg)
				if err == nil {
					t.Fatalf("reply %#v, want an error", v)
				}
				if cerr := tt.check(err); cerr != nil {
					t.Fatalf("%v: got %v", cerr, err)
				}
			})
		}
	})

	t.Run("reclaimer", func(t *testing.T) { testReclaimer(t, node, acts) })

	t.Run("leave", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := node.Leave(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := node.Request(ctx, "req", counterKindName, &Get{}); !errors.Is(err, cluster.ErrStopped) {
			t.Fatalf("Request after Leave = %v, want ErrStopped", err)
		}
		if err := node.Leave(ctx); err != nil {
			t.Fatalf("second Leave = %v, want nil", err)
		}
	})
}

func testReclaimer(t *testing.T, node *cluster.Node, acts *activations) {
	ids := make([]string, 23)
	for i := range ids {
		ids[i] = fmt.Sprintf("rc-%02d", i)
	}
	newReclaimer := func(t *testing.T, cfg cluster.ReclaimerConfig) *cluster.Reclaimer {
		t.Helper()
		r, err := cluster.NewReclaimer(node, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	t.Run("config", func(t *testing.T) {
		list := sliceLister(ids)
		wake := func(string) any { return &Get{} }
		bad := []cluster.ReclaimerConfig{
			{List: list, Wake: wake},
			{Kind: counterKindName, Wake: wake},
			{Kind: counterKindName, List: list},
			{Kind: counterKindName, List: list, Wake: wake, Jitter: 1},
			{Kind: counterKindName, List: list, Wake: wake, Interval: -time.Second},
		}
		for i, cfg := range bad {
			if _, err := cluster.NewReclaimer(node, cfg); !errors.Is(err, cluster.ErrInvalidConfig) {
				t.Errorf("config %d: err = %v, want ErrInvalidConfig", i, err)
			}
		}
	})

	t.Run("sweep pages and wakes every owned identity", func(t *testing.T) {
		var calls atomic.Int64
		list := sliceLister(ids)
		r := newReclaimer(t, cluster.ReclaimerConfig{
			Kind: counterKindName,
			List: func(ctx context.Context, after string, limit int) ([]string, error) {
				calls.Add(1)
				return list(ctx, after, limit)
			},
			Wake:     func(string) any { return &Get{} },
			PageSize: 5,
		})
		res, err := r.Sweep(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := cluster.SweepResult{Listed: len(ids), Owned: len(ids), Woken: len(ids)}
		if res != want {
			t.Fatalf("sweep %+v, want %+v", res, want)
		}
		if c := calls.Load(); c != 5 { // 23 ids in pages of 5
			t.Fatalf("List called %d times, want 5", c)
		}
		for _, id := range ids {
			if acts.count(id) != 1 {
				t.Fatalf("%s activated %d times, want 1", id, acts.count(id))
			}
		}
	})

	t.Run("concurrency is bounded", func(t *testing.T) {
		slowMaxSeen.Store(0)
		r := newReclaimer(t, cluster.ReclaimerConfig{
			Kind:        slowKindName,
			List:        sliceLister(ids),
			Wake:        func(string) any { return &Get{} },
			Concurrency: 3,
		})
		res, err := r.Sweep(context.Background())
		if err != nil || res.Woken != len(ids) {
			t.Fatalf("sweep %+v, %v", res, err)
		}
		if m := slowMaxSeen.Load(); m > 3 || m < 2 {
			t.Fatalf("%d wakes in flight at once, want 2..3", m)
		}
	})

	t.Run("list errors and disorder stop the sweep", func(t *testing.T) {
		boom := errors.New("store down")
		failing := newReclaimer(t, cluster.ReclaimerConfig{
			Kind: counterKindName,
			List: func(context.Context, string, int) ([]string, error) { return nil, boom },
			Wake: func(string) any { return &Get{} },
		})
		if _, err := failing.Sweep(context.Background()); !errors.Is(err, boom) {
			t.Fatalf("Sweep = %v, want %v", err, boom)
		}
		looping := newReclaimer(t, cluster.ReclaimerConfig{
			Kind:     counterKindName,
			List:     func(context.Context, string, int) ([]string, error) { return []string{"b", "a"}, nil },
			Wake:     func(string) any { return &Get{} },
			PageSize: 2,
		})
		if _, err := looping.Sweep(context.Background()); err == nil {
			t.Fatal("Sweep accepted identities out of order")
		}
	})

	t.Run("run sweeps periodically and stops on cancel", func(t *testing.T) {
		var sweeps atomic.Int64
		r := newReclaimer(t, cluster.ReclaimerConfig{
			Kind: counterKindName,
			List: func(context.Context, string, int) ([]string, error) {
				sweeps.Add(1)
				return []string{"run-1"}, nil
			},
			Wake:     func(string) any { return &Get{} },
			Interval: 20 * time.Millisecond,
			Settle:   10 * time.Millisecond,
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		deadline := time.Now().Add(5 * time.Second)
		for sweeps.Load() < 3 {
			if time.Now().After(deadline) {
				t.Fatalf("only %d sweeps in 5s", sweeps.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, want context.Canceled", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Run did not stop after cancel")
		}
		if acts.count("run-1") != 1 {
			t.Fatalf("run-1 activated %d times, want 1 (later sweeps find it active)", acts.count("run-1"))
		}
	})
}

func startBenchNode(b *testing.B) *cluster.Node {
	b.Helper()
	node, err := cluster.Start(cluster.Config{
		GossipAddr:  "127.0.0.1:0",
		RemoteAddr:  "127.0.0.1:0",
		ClusterName: "bench",
		Kinds:       []*pcluster.Kind{counterKind()},
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(node.Kill)
	return node
}

// BenchmarkRequestLocal measures Node.Request to an active grain on the
// same member: envelope wrap, PID cache hit, local delivery, reply unwrap.
func BenchmarkRequestLocal(b *testing.B) {
	onActivate = func(string) {}
	node := startBenchNode(b)
	ctx := context.Background()
	if _, err := node.Request(ctx, "bench", counterKindName, &Get{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := node.Request(ctx, "bench", counterKindName, &Get{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOwnerAddress measures the rendezvous lookup the reclaimer runs
// for every listed identity.
func BenchmarkOwnerAddress(b *testing.B) {
	node := startBenchNode(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if node.OwnerAddress(fmt.Sprintf("m-%d", i%1000), counterKindName) == "" {
			b.Fatal("no owner")
		}
	}
}

// TestLocalAttemptTimesOut: a local attempt ends at RequestTimeout even
// when its timer comes from the pool of earlier attempts' timers (fast
// requests first put some there). Once the grain answers slower than
// RequestTimeout, every attempt must give up before its answer, so the
// request ends unavailable; a timer that did not fire would let the first
// attempt wait for the slow answer and succeed.
func TestLocalAttemptTimesOut(t *testing.T) {
	onActivate = func(string) {}
	const timeout = 50 * time.Millisecond
	var delay atomic.Int64 // of the sleepy grain's answers
	sleepy := pcluster.NewKind("sleepy", actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*envelope.Msg); ok {
			time.Sleep(time.Duration(delay.Load()))
			ctx.Respond(envelope.Wrap(&Count{Host: ctx.ActorSystem().Address()}))
		}
	}))
	node, err := cluster.Start(cluster.Config{
		GossipAddr:     "127.0.0.1:0",
		RemoteAddr:     "127.0.0.1:0",
		ClusterName:    "attempt-timeout",
		Kinds:          []*pcluster.Kind{sleepy},
		RequestTimeout: timeout,
		Retry:          cluster.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond},
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 50 { // activates the grain, then local attempts that pool their timers
		if _, err := node.Request(ctx, "s", "sleepy", &Get{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := node.Cluster().PidCache.Get("s", "sleepy"); !ok {
		t.Fatal("the grain's PID is not cached: the requests did not take the local path")
	}
	delay.Store(int64(3 * timeout))
	short, cancel2 := context.WithTimeout(context.Background(), 5*timeout)
	defer cancel2()
	start := time.Now()
	v, err := node.Request(short, "s", "sleepy", &Get{})
	if err == nil || !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("request to a grain slower than RequestTimeout: %#v, %v after %v; want unavailable", v, err, time.Since(start))
	}
	delay.Store(0)
}
