package cluster

import (
	"errors"
	"sync/atomic"
)

// Why a member refuses to activate a grain (ActivationGate.MayActivate).
var (
	ErrStarting  = errors.New("this member is still starting")
	ErrDraining  = errors.New("this member is draining")
	ErrUnsettled = errors.New("this process was stalled moments ago; its view of the cluster may be stale")
)

// ActivationGate is a member's consent to activate the grains peers route
// to it. Kinds are registered before Start returns, so a peer may route an
// activation here while Start is still running; until Started publishes the
// node every activation is refused, and the grains' callbacks never read a
// node that other goroutines cannot see yet. From Drain on it refuses again:
// the member's grains belong elsewhere once it drains or was evicted. The
// zero value is ready to use; safe for concurrent use.
type ActivationGate struct {
	node     atomic.Pointer[Node]
	draining atomic.Bool
}

// Started publishes node, which Start returned; activations may begin.
func (g *ActivationGate) Started(node *Node) { g.node.Store(node) }

// Drain refuses every later activation.
func (g *ActivationGate) Drain() { g.draining.Store(true) }

// MayActivate reports why an activation must be refused now, or nil: the
// member is starting or draining, its process was stalled moments ago (a
// claim by its stale view would only steal the grain from its live owner,
// docs/operations.md §3), or it is not admitted (Node.Admitted).
func (g *ActivationGate) MayActivate() error {
	node := g.node.Load()
	switch {
	case node == nil:
		return ErrStarting
	case g.draining.Load():
		return ErrDraining
	case node.Unsettled():
		return ErrUnsettled
	}
	return node.Admitted()
}

// Owner is this member's ID, the owner a claim records ("" before Started;
// MayActivate refuses then).
func (g *ActivationGate) Owner() string {
	if node := g.node.Load(); node != nil {
		return node.ID()
	}
	return ""
}

// Owns reports whether this member owns identity of kind in its current
// view (false before Started).
func (g *ActivationGate) Owns(kind, identity string) bool {
	node := g.node.Load()
	return node != nil && node.OwnerAddress(identity, kind) == node.Self()
}
