package cluster

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// Requests carry their deadline. A member that did not run for a while (a
// freeze, a starved process, a cut link) reads the requests queued in its
// sockets when it runs again, long after their senders gave up on it and
// sent them to another member; acting on them would take a match from its
// live owner (docs/operations.md §3). So each attempt of Node.Request to a
// grain carries the time after which its sender no longer waits
// (envelope.Msg.Deadline: the attempt's start plus its bound), the sender
// stops waiting exactly then, and the receiving grain drops what it reads
// later (envelope.Msg.Expired, with an allowance for clock skew between
// members; the match grain does so in actors/grain.go). And an attempt
// that gave up sends nothing more: see attemptSender.

// attemptSender is the sender protoactor's Request uses for one attempt
// (pcluster.WithContext): that call first looks up the grain's activation
// (asking the owner's placement actor, which may block for 5 s) and only
// then sends the message, even when the attempt was abandoned meanwhile.
// That is the case of a frozen owner: the attempt is given up when the
// owner leaves the topology, the owner reads the activation request when
// it wakes and answers it, and the message would follow at once, into an
// activation that then claims a match its sender took elsewhere.
// attemptSender sends only while the attempt is on and before its
// deadline, and carries the attempt's copy of the message with that
// deadline (one allocation for both).
type attemptSender struct {
	actor.SenderContext
	log      *slog.Logger
	msg      envelope.Msg
	deadline int64 // Unix ns
	over     atomic.Bool
}

// newAttemptSender returns the sender of an attempt that ends at deadline,
// and the message it sends: a copy of wire carrying the deadline if wire is
// an envelope, else wire itself (a protobuf message has no room for one).
func newAttemptSender(root actor.SenderContext, log *slog.Logger, wire any, deadline time.Time) (*attemptSender, any) {
	s := &attemptSender{SenderContext: root, log: log, deadline: deadline.UnixNano()}
	m, ok := wire.(*envelope.Msg)
	if !ok {
		return s, wire
	}
	s.msg = *m
	s.msg.Deadline = s.deadline
	return s, &s.msg
}

// RequestFuture implements actor.SenderContext: it sends only while the
// attempt is on. A refused send gets a future that fails at once, as a
// timeout, and protoactor's Request then drops the PID it just cached
// for the identity (the activation of a member the attempt gave up on).
func (s *attemptSender) RequestFuture(pid *actor.PID, message any, timeout time.Duration) *actor.Future {
	if s.over.Load() || time.Now().UnixNano() >= s.deadline {
		s.log.Debug("cluster: an attempt that gave up sends nothing", slog.String("to", pid.String()),
			slog.Bool("abandoned", s.over.Load()))
		return actor.NewFuture(s.ActorSystem(), 0)
	}
	return s.SenderContext.RequestFuture(pid, message, timeout)
}

// end marks the attempt over: nothing is sent for it any more.
func (s *attemptSender) end() { s.over.Store(true) }
