package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// Member descriptions. Every member runs one plain actor that answers a
// peer's question "who are you" with Config.Info, so that an operator asking
// any member sees every member's versions (a rolling upgrade shows which
// members run what) instead of asking each member in turn. The question
// travels over the actor remote like grain messages do, so it is as
// protected as they are (docs/security.md).

// InfoMember is the key under which a description names the member that
// gave it: an address can be answered by another member id than the one a
// view still lists (a member restarted quickly on the same address).
const InfoMember = "member"

// infoActorName is the actor every member spawns for Describe.
const infoActorName = "matchgrain-info"

// defaultDescribeTimeout bounds Describe when ctx has no sooner deadline.
const defaultDescribeTimeout = 2 * time.Second

// ErrNoDescription: the member did not describe itself (it runs a build
// without member descriptions, or it is gone).
var ErrNoDescription = errors.New("cluster: member gave no description")

// InfoRequest asks a member for its description.
type InfoRequest struct{}

// InfoReply is a member's description: Config.Info plus InfoMember.
type InfoReply struct {
	Info map[string]string
}

func init() {
	envelope.Register("mg.cluster.InfoRequest", func() any { return &InfoRequest{} })
	envelope.Register("mg.cluster.InfoReply", func() any { return &InfoReply{} })
}

type infoActor struct{ info map[string]string }

// Receive implements actor.Actor.
func (a *infoActor) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*envelope.Msg)
	if !ok || ctx.Sender() == nil {
		return
	}
	if _, ok := m.V.(*InfoRequest); ok {
		ctx.Respond(envelope.Wrap(&InfoReply{Info: a.info}))
	}
}

// startInfo spawns the actor that answers Describe.
func (n *Node) startInfo() error {
	info := maps.Clone(n.cfg.Info)
	if info == nil {
		info = map[string]string{}
	}
	info[InfoMember] = n.system.ID
	n.info = info
	props := actor.PropsFromProducer(func() actor.Actor { return &infoActor{info: info} })
	if _, err := n.system.Root.SpawnNamed(props, infoActorName); err != nil {
		return fmt.Errorf("cluster: spawn member info actor: %w", err)
	}
	return nil
}

// Describe returns the description of the member at address ("host:port",
// as Members reports it): its Config.Info, with its own ID under
// InfoMember. It waits at most until ctx ends or 2 s. A member that cannot
// answer (gone, or a build without descriptions) gives ErrNoDescription.
func (n *Node) Describe(ctx context.Context, address string) (map[string]string, error) {
	if address == n.Self() {
		return maps.Clone(n.info), nil
	}
	timeout := defaultDescribeTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("%w: %s: %w", ErrNoDescription, address, context.DeadlineExceeded)
	}
	f := n.system.Root.RequestFuture(actor.NewPID(address, infoActorName), envelope.Wrap(&InfoRequest{}), timeout)
	res, err := f.Result()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNoDescription, address, err)
	}
	if m, ok := res.(*envelope.Msg); ok {
		res = m.V
	}
	r, ok := res.(*InfoReply)
	if !ok || r.Info == nil {
		return nil, fmt.Errorf("%w: %s answered %T", ErrNoDescription, address, res)
	}
	return r.Info, nil
}
