package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Kind is one kind of fault.
type Kind string

// The fault kinds, in the report's order. KindPrimaryKill needs the highly
// available database (Config.PGHA); without it the report says
// primary-kill=off.
const (
	KindPeersCut    Kind = "peers-cut"    // one member cut from its peers (gossip and remote), not from PostgreSQL
	KindDBCut       Kind = "db-cut"       // one member cut from PostgreSQL, not from its peers
	KindSplit       Kind = "split"        // a minority of members cut from the majority and PostgreSQL
	KindOneWay      Kind = "one-way"      // every packet from one member to another dropped, the reverse path intact
	KindLoss        Kind = "loss"         // random loss on one member's link
	KindSlow        Kind = "slow"         // one member's link limited by a token bucket (tc tbf)
	KindPause       Kind = "pause"        // SIGSTOP, then SIGCONT
	KindKill        Kind = "kill"         // kill -9, then a restart
	KindPrimaryKill Kind = "primary-kill" // the database primary killed (Config.PGHA only)
)

// Kinds are the kinds the scheduler injects; primary-kill joins them
// with the highly available database.
var Kinds = []Kind{KindPeersCut, KindDBCut, KindSplit, KindOneWay, KindLoss, KindSlow, KindPause, KindKill}

// lossPercent is the share of packets the loss fault drops each way.
const lossPercent = 30

// Fault is one injected fault, as the report and the liveness check see it.
type Fault struct {
	Kind    Kind
	Targets []int // member numbers (1-based); for split the minority, for one-way from and to
	Start   time.Time
	Healed  time.Time
}

// String names the fault as the schedule prints it: kind(members).
func (f Fault) String() string {
	t := make([]string, len(f.Targets))
	for i, m := range f.Targets {
		t[i] = fmt.Sprintf("m%d", m)
	}
	return fmt.Sprintf("%s(%s)", f.Kind, strings.Join(t, ","))
}

// pick chooses a fault of kind k among n members.
func pick(rng *rand.Rand, k Kind, n int) Fault {
	f := Fault{Kind: k}
	perm := rng.Perm(n)
	switch k {
	case KindSplit:
		for _, i := range perm[:n/2] {
			f.Targets = append(f.Targets, i+1)
		}
	case KindOneWay:
		f.Targets = []int{perm[0] + 1, perm[1] + 1}
	case KindPrimaryKill:
		// The database's fault: no member is its target.
	default:
		f.Targets = []int{perm[0] + 1}
	}
	return f
}

// dropBetween is the nft rules that drop every frame between the bridge
// ports of a and b, in both directions unless oneWay.
func dropBetween(a, b string, oneWay bool) string {
	r := fmt.Sprintf("add rule bridge %s faults iifname %q oifname %q drop\n", nftTable, a, b)
	if !oneWay {
		r += fmt.Sprintf("add rule bridge %s faults iifname %q oifname %q drop\n", nftTable, b, a)
	}
	return r
}

// netRules is the nft script of a network fault (empty for the others).
func netRules(f Fault, members int) string {
	var b strings.Builder
	in := func(m int) bool {
		for _, t := range f.Targets {
			if t == m {
				return true
			}
		}
		return false
	}
	switch f.Kind {
	case KindPeersCut:
		for m := 1; m <= members; m++ {
			if !in(m) {
				b.WriteString(dropBetween(port(MemberNS(f.Targets[0])), port(MemberNS(m)), false))
			}
		}
	case KindDBCut:
		b.WriteString(dropBetween(port(MemberNS(f.Targets[0])), port(pgNS), false))
	case KindSplit:
		for _, t := range f.Targets {
			b.WriteString(dropBetween(port(MemberNS(t)), port(pgNS), false))
			for m := 1; m <= members; m++ {
				if !in(m) {
					b.WriteString(dropBetween(port(MemberNS(t)), port(MemberNS(m)), false))
				}
			}
		}
	case KindOneWay:
		b.WriteString(dropBetween(port(MemberNS(f.Targets[0])), port(MemberNS(f.Targets[1])), true))
	case KindLoss:
		p := port(MemberNS(f.Targets[0]))
		fmt.Fprintf(&b, "add rule bridge %s faults iifname %q numgen random mod 100 < %d drop\n", nftTable, p, lossPercent)
		fmt.Fprintf(&b, "add rule bridge %s faults oifname %q numgen random mod 100 < %d drop\n", nftTable, p, lossPercent)
	}
	return b.String()
}

// slowLink is the tc token bucket of the slow fault: 512 kbit/s with up to
// 300 ms of queue, on both ends of the member's link.
var slowLink = []string{"tbf", "rate", "512kbit", "burst", "16kb", "latency", "300ms"}

// ApplyNet injects the network part of f among members, in a network
// Setup made: nft rules at the bridge, or token buckets.
func ApplyNet(ctx context.Context, f Fault, members int) error {
	if f.Kind == KindSlow {
		ns := MemberNS(f.Targets[0])
		if err := run(ctx, "ip", append([]string{"netns", "exec", ns, "tc", "qdisc", "replace", "dev", "eth0", "root"}, slowLink...)...); err != nil {
			return err
		}
		return run(ctx, "ip", append([]string{"netns", "exec", bridgeNS, "tc", "qdisc", "replace", "dev", port(ns), "root"}, slowLink...)...)
	}
	if rules := netRules(f, members); rules != "" {
		return nft(ctx, rules)
	}
	return nil
}

// HealNet removes every network fault: the nft chain is flushed, token
// buckets removed (one fault runs at a time, so this heals exactly f).
func HealNet(ctx context.Context, f Fault) error {
	if f.Kind == KindSlow {
		ns := MemberNS(f.Targets[0])
		err1 := inNS(ctx, ns, "tc", "qdisc", "del", "dev", "eth0", "root")
		err2 := inNS(ctx, bridgeNS, "tc", "qdisc", "del", "dev", port(ns), "root")
		if err1 != nil || err2 != nil {
			return fmt.Errorf("heal %s: %v; %v", f, err1, err2)
		}
		return nil
	}
	return nft(ctx, fmt.Sprintf("flush chain bridge %s faults\n", nftTable))
}
