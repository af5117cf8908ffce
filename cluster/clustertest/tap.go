package clustertest

import "github.com/asynkron/protoactor-go/actor"

// Tap is an actor.Process that hands every user message it is sent to the
// channel, out of its envelope: a sender whose replies a test reads, or a
// target whose deliveries it counts. Give it room for what the test
// expects; a send to a full Tap blocks the sender.
type Tap chan any

var _ actor.Process = Tap(nil)

// SendUserMessage implements actor.Process.
func (t Tap) SendUserMessage(_ *actor.PID, m any) { t <- actor.UnwrapEnvelopeMessage(m) }

// SendSystemMessage implements actor.Process; system messages are dropped.
func (Tap) SendSystemMessage(*actor.PID, any) {}

// Stop implements actor.Process.
func (Tap) Stop(*actor.PID) {}
