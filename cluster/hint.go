package cluster

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"
)

// closedPortTimeout bounds each dial that checks whether a peer's port
// still has a listener. A refusal comes back in microseconds on loopback
// and within a round trip on a LAN; anything slower proves nothing.
const closedPortTimeout = 500 * time.Millisecond

// closedPortPatience is how long a hint's ports are asked, closedPortRetry
// apart, before the hint is dropped (the peer lives, or is frozen).
const (
	closedPortPatience = time.Second
	closedPortRetry    = 20 * time.Millisecond
)

// deathHints confirms, at once, the death of a peer whose connection to
// this member closed: a process that was killed (or crashed) has its
// sockets closed by its kernel, so its remote's stream ends here and its
// ports refuse new connections. memberlist's probes would declare it dead
// only after its suspicion timeout (FailureDetection, about 2 s on a LAN),
// and every match it owned would wait that long.
//
// The hint alone proves nothing (a stream also ends on a network blip), so
// the peer is declared dead only when both its remote's and its gossip's
// TCP ports refuse a connection: no process listens there any more. A
// frozen member (SIGSTOP, a long stall) keeps its sockets, and its kernel
// still accepts connections on its listening ports; a machine that lost
// power or its network answers nothing. Both are left to memberlist's
// probes, exactly as without hints. A port that another process took
// over answers too: no conclusion either.
type deathHints struct {
	p        *provider
	checking sync.Map // remote address → struct{}: one check per peer at a time
}

// closed is called when the remote's connection to address ended. It never
// blocks: the check runs on its own goroutine.
func (h *deathHints) closed(address string) {
	if _, busy := h.checking.LoadOrStore(address, struct{}{}); busy {
		return
	}
	go func() {
		defer h.checking.Delete(address)
		h.check(address)
	}()
}

func (h *deathHints) check(address string) {
	name, gossip, ok := h.peerAt(address)
	if !ok {
		return
	}
	// A dying process's kernel closes its connections and its listeners
	// one after the other: the stream may end here while the ports still
	// accept for a moment, so they are asked a few times.
	closed := false
	for deadline := time.Now().Add(closedPortPatience); !closed && time.Now().Before(deadline); {
		if closed = portClosed(address) && portClosed(gossip); !closed {
			time.Sleep(closedPortRetry) // polling the peer's ports, not synchronizing with this process
		}
	}
	if !closed {
		return
	}
	if h.p.declareDead(name) {
		h.p.log.Info("cluster: a peer's connection closed and its ports refuse connections: out of the topology without waiting for probes",
			slog.String("peer", name), slog.String("address", address))
	}
}

// peerAt finds the live peer whose remote listens at address, and its
// gossip address.
func (h *deathHints) peerAt(address string) (name, gossip string, ok bool) {
	p := h.p
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	for n, ln := range p.live {
		if n == p.mlConfig.Name {
			continue
		}
		var m pcluster.Member
		if proto.Unmarshal(ln.meta, &m) == nil && m.Address() == address {
			return n, ln.addr, true
		}
	}
	return "", "", false
}

// portClosed reports whether a TCP connection to address was refused:
// nothing listens there. Success, a timeout or any other error is no proof.
func portClosed(address string) bool {
	c, err := net.DialTimeout("tcp", address, closedPortTimeout)
	if err == nil {
		_ = c.Close() // only the answer mattered
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// declareDead takes name out of the live set as memberlist's leave event
// would (protoactor then blocks its id for good, docs/cluster.md §1.1), and
// reports whether it was there. Should memberlist hear from it again, the
// provider treats it as every member declared dead while alive: it is told
// to restart.
func (p *provider) declareDead(name string) bool {
	p.liveMu.Lock()
	_, ok := p.live[name]
	if ok {
		delete(p.live, name)
		delete(p.trust, name)
		p.departed[name] = time.Now()
	}
	p.liveMu.Unlock()
	if ok {
		p.kick()
	}
	return ok
}
