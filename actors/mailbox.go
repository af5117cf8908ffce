package actors

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// stoppingMailbox is the match grain's mailbox: protoactor's unbounded one,
// except that once the grain is stopping, every request still in it, or
// posted to it until the actor has left the registry, is answered
// Unavailable ("match is moving") instead of dropped. protoactor stops an
// actor behind a PoisonPill or a Stop and silently drops what its mailbox
// still holds then; a caller whose request was among those waited out its
// whole attempt (5 s by default) before it tried the match's next
// activation. A grain stops so when it halts (a fence, a move, a refused
// activation), when it passivates, and when protoactor's placement moves it
// at a topology change; with this mailbox each such caller retries at once.
func stoppingMailbox() actor.Mailbox {
	return &answeringMailbox{Mailbox: actor.Unbounded()()}
}

// answeringMailbox hands its messages to an answeringInvoker in front of
// the actor.
type answeringMailbox struct {
	actor.Mailbox
}

// RegisterHandlers implements actor.Mailbox.
func (m *answeringMailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	a := &answeringInvoker{MessageInvoker: invoker}
	if s, ok := invoker.(interface{ ActorSystem() *actor.ActorSystem }); ok {
		a.system = s.ActorSystem()
	}
	m.Mailbox.RegisterHandlers(a, dispatcher)
}

// answeringInvoker passes every message to the actor until it sees the
// actor's stop coming (a PoisonPill, a Stop), then answers the requests
// itself. The mailbox calls it from one goroutine at a time.
type answeringInvoker struct {
	actor.MessageInvoker
	system   *actor.ActorSystem
	stopping atomic.Bool
}

// InvokeSystemMessage implements actor.MessageInvoker.
func (a *answeringInvoker) InvokeSystemMessage(m any) {
	if _, ok := m.(*actor.Stop); ok {
		a.stopping.Store(true)
	}
	a.MessageInvoker.InvokeSystemMessage(m)
}

// InvokeUserMessage implements actor.MessageInvoker.
func (a *answeringInvoker) InvokeUserMessage(m any) {
	if a.stopping.Load() {
		a.answer(m)
		return
	}
	if _, ok := actor.UnwrapEnvelopeMessage(m).(*actor.PoisonPill); ok {
		a.stopping.Store(true)
	}
	a.MessageInvoker.InvokeUserMessage(m)
}

// answer tells the sender of a request that reached a stopping grain to
// look for the match's next activation; messages nobody waits for are
// dropped, as protoactor would.
//
//go:noinline
func (a *answeringInvoker) answer(m any) {
	env, ok := m.(*actor.MessageEnvelope)
	if !ok || env.Sender == nil || a.system == nil {
		return
	}
	if _, ok := env.Message.(*envelope.Msg); !ok {
		return
	}
	a.system.Root.Send(env.Sender, envelope.Wrap(movingReply()))
}
