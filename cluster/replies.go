package cluster

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// replyAddress is the PID address of attemptLocal's reply processes. It is
// never a member's host:port, so protoactor's registry hands such a PID to
// the resolver replies installs instead of looking it up among its own
// processes or dialling it.
const replyAddress = "matchgrain.local-reply"

// replies holds the reply processes of the local requests in flight, by PID
// id. protoactor's registry would take them too, but it spreads ids over
// 32,768 small maps (1,024 buckets of 32 shards), and a request id is new
// every time: after a few tens of thousands of requests every one of those
// maps holds a slot group of its own, about 10 MB that stays. One map sized
// by the requests in flight costs nothing at rest.
type replies struct {
	next atomic.Uint64
	mu   sync.Mutex
	m    map[string]*replyProcess
}

func newReplies() *replies { return &replies{m: map[string]*replyProcess{}} }

// add registers a reply process and returns its PID.
func (r *replies) add(rp *replyProcess) *actor.PID {
	var buf [32]byte
	id := string(strconv.AppendUint(append(buf[:0], "reply$"...), r.next.Add(1), 36))
	r.mu.Lock()
	r.m[id] = rp
	r.mu.Unlock()
	return &actor.PID{Address: replyAddress, Id: id}
}

// remove unregisters pid; a reply that comes later is dropped.
func (r *replies) remove(pid *actor.PID) {
	r.mu.Lock()
	delete(r.m, pid.Id)
	r.mu.Unlock()
}

// resolve is the actor.AddressResolver for replyAddress. It must be
// registered before the remote's, which claims every other address.
func (r *replies) resolve(pid *actor.PID) (actor.Process, bool) {
	if pid.Address != replyAddress {
		return nil, false
	}
	r.mu.Lock()
	rp, ok := r.m[pid.Id]
	r.mu.Unlock()
	if !ok {
		return droppedReply{}, true
	}
	return rp, true
}

// droppedReply takes a reply whose request is over (it timed out, or its
// context ended): like a late reply to a protoactor future, it is dropped.
type droppedReply struct{}

var _ actor.Process = droppedReply{}

// SendUserMessage implements actor.Process.
func (droppedReply) SendUserMessage(*actor.PID, any) {}

// SendSystemMessage implements actor.Process.
func (droppedReply) SendSystemMessage(*actor.PID, any) {}

// Stop implements actor.Process.
func (droppedReply) Stop(*actor.PID) {}
