package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// The test grain: a counter keyed by identity that answers Inc and Get with
// its count and the address of the member hosting it.
const counterKindName = "counter"

// Inc adds By to the counter.
type Inc struct{ By int }

// Get reads the counter.
type Get struct{}

// Count is the counter's answer.
type Count struct {
	N    int
	Host string
}

func init() {
	envelope.Register("clustertest.Inc", func() any { return new(Inc) })
	envelope.Register("clustertest.Get", func() any { return new(Get) })
	envelope.Register("clustertest.Count", func() any { return new(Count) })
}

// onActivate is called when a counter activates; children emit an event,
// in-process tests count.
var onActivate = func(identity string) { clustertest.Emit("activated " + identity) }

type counterGrain struct{ n int }

func (g *counterGrain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *pcluster.ClusterInit:
		onActivate(m.Identity.Identity)
	case *envelope.Msg:
		switch v := m.V.(type) {
		case *Inc:
			g.n += v.By
			ctx.Respond(envelope.Wrap(&Count{N: g.n, Host: ctx.ActorSystem().Address()}))
		case *Get:
			ctx.Respond(envelope.Wrap(&Count{N: g.n, Host: ctx.ActorSystem().Address()}))
		}
	}
}

func counterKind() *pcluster.Kind {
	return pcluster.NewKind(counterKindName, actor.PropsFromProducer(func() actor.Actor { return &counterGrain{} }))
}

// Commands the member children understand besides the built-ins.
const (
	cmdInc  = "inc"  // arg: "identity" or "identity by"; result: JSON Count
	cmdLoad = "load" // arg: JSON loadArgs; result: JSON loadResult
	cmdKeys = "keys" // result: comma-separated gossip key fingerprints, primary first
	cmdPID  = "pid"  // arg: counter identity; result: "address id" of its activation
)

// envReclaim lists the identities a member's reclaimer should keep active
// (comma-separated); empty runs no reclaimer.
const envReclaim = "CLUSTER_TEST_RECLAIM"

func TestHelperMember(t *testing.T) {
	if !clustertest.IsChild() {
		t.Skip("helper process for the cluster tests")
	}
	clustertest.RunMember(clustertest.MemberSpec{
		Kinds: []*pcluster.Kind{counterKind()},
		Handlers: map[string]clustertest.MemberHandler{
			cmdInc:       incHandler,
			cmdLoad:      loadHandler,
			cmdKeys:      keysHandler,
			cmdPID:       pidHandler,
			cmdGoneSend:  goneSendHandler,
			cmdSendTo:    sendToHandler,
			cmdStopGrain: stopGrainHandler,
			cmdSetPID:    setPIDHandler,
		},
		OnStart: startTestReclaimer,
	})
}

func incHandler(ctx context.Context, n *cluster.Node, arg string) (string, error) {
	identity, byStr, _ := strings.Cut(arg, " ")
	by := 1
	if byStr != "" {
		if _, err := fmt.Sscan(byStr, &by); err != nil {
			return "", fmt.Errorf("bad increment %q: %w", byStr, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := n.Request(ctx, identity, counterKindName, &Inc{By: by})
	if err != nil {
		return "", err
	}
	c, ok := v.(*Count)
	if !ok {
		return "", fmt.Errorf("reply is %T, want *Count", v)
	}
	b, err := json.Marshal(c)
	return string(b), err
}

type loadArgs struct {
	Identities []string
	Duration   time.Duration
	Timeout    time.Duration // per request, retries included
}

type loadResult struct {
	OK, Failed int
	MaxLatency time.Duration
	Errors     []string
	Hosts      map[string]string // identity → host of the last answer
}

// loadHandler sends Inc to every identity in turn, one worker per identity,
// until Duration has passed.
func loadHandler(ctx context.Context, n *cluster.Node, arg string) (string, error) {
	var a loadArgs
	if err := json.Unmarshal([]byte(arg), &a); err != nil {
		return "", err
	}
	var (
		mu  sync.Mutex
		res = loadResult{Hosts: map[string]string{}}
		wg  sync.WaitGroup
	)
	end := time.Now().Add(a.Duration)
	for _, id := range a.Identities {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				rctx, cancel := context.WithTimeout(ctx, a.Timeout)
				start := time.Now()
				v, err := n.Request(rctx, id, counterKindName, &Inc{By: 1})
				cancel()
				lat := time.Since(start)
				mu.Lock()
				res.MaxLatency = max(res.MaxLatency, lat)
				if err != nil {
					res.Failed++
					if len(res.Errors) < 5 {
						res.Errors = append(res.Errors, err.Error())
					}
				} else {
					res.OK++
					res.Hosts[id] = v.(*Count).Host
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	b, err := json.Marshal(res)
	return string(b), err
}

// startTestReclaimer runs a reclaimer over the identities in envReclaim.
func startTestReclaimer(n *cluster.Node) {
	list := os.Getenv(envReclaim)
	if list == "" {
		return
	}
	ids := strings.Split(list, ",")
	r, err := cluster.NewReclaimer(n, cluster.ReclaimerConfig{
		Kind:     counterKindName,
		List:     sliceLister(ids),
		Wake:     func(string) any { return &Get{} },
		Interval: 2 * time.Second,
		Settle:   200 * time.Millisecond,
		PageSize: 4,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	go func() { _ = r.Run(context.Background()) }() // runs until the process exits
}

// sliceLister serves sorted ids page by page, counting calls.
func sliceLister(ids []string) func(ctx context.Context, after string, limit int) ([]string, error) {
	sorted := append([]string(nil), ids...)
	slices.Sort(sorted)
	return func(_ context.Context, after string, limit int) ([]string, error) {
		i := 0
		for i < len(sorted) && sorted[i] <= after {
			i++
		}
		return sorted[i:min(len(sorted), i+limit)], nil
	}
}

// activations counts counter activations per identity in this process.
type activations struct {
	mu sync.Mutex
	n  map[string]int
	ct atomic.Int64
}

func (a *activations) add(identity string) {
	a.mu.Lock()
	a.n[identity]++
	a.mu.Unlock()
	a.ct.Add(1)
}

func (a *activations) count(identity string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[identity]
}
