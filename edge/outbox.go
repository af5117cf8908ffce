package edge

import "sync"

// outbox is a connection's bounded queue of encoded frames waiting for the
// writer goroutine. Producers (the match through SeatSink.Deliver, the
// reader goroutine) never block: a push that would exceed either bound fails
// and the caller drops the connection, so a client that does not read costs
// at most maxBytes of memory.
type outbox struct {
	maxFrames int
	maxBytes  int

	mu     sync.Mutex
	frames [][]byte
	bytes  int
	closed bool
	// ready holds one token while frames are waiting.
	ready chan struct{}
}

func newOutbox(maxFrames, maxBytes int) *outbox {
	return &outbox{maxFrames: maxFrames, maxBytes: maxBytes, ready: make(chan struct{}, 1)}
}

// push appends frames atomically (all or none). It returns false when the
// bounds would be exceeded; it returns true without queuing anything once the
// outbox is closed (the frames are simply not wanted any more).
func (o *outbox) push(frames ...[]byte) bool {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return true
	}
	if len(o.frames)+len(frames) > o.maxFrames || o.bytes+n > o.maxBytes {
		o.mu.Unlock()
		return false
	}
	o.frames = append(o.frames, frames...)
	o.bytes += n
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
	return true
}

// take removes and returns every queued frame, reusing buf's storage.
func (o *outbox) take(buf [][]byte) [][]byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	buf = append(buf[:0], o.frames...)
	clear(o.frames)
	o.frames = o.frames[:0]
	o.bytes = 0
	return buf
}

// close drops the queue and refuses further frames.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.frames = nil
	o.bytes = 0
	o.mu.Unlock()
}
