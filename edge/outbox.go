package edge

import "sync"

// outbox is a connection's bounded queue of encoded frames waiting for the
// writer goroutine. Producers (the match through SeatSink.Deliver, the
// reader goroutine, the heartbeat timer) never block: a push that would
// exceed either bound fails and the caller drops the connection, so a client
// that does not read costs at most maxBytes of memory.
//
// The writer goroutine runs only while there is something to write: the
// outbox records whether one runs (writing), a push that finds none tells
// its caller to start one, and the writer ends its turn through release
// when the queue is empty. An idle connection therefore has no writer
// goroutine and no writer stack.
type outbox struct {
	maxFrames int
	maxBytes  int

	mu      sync.Mutex
	frames  [][]byte
	bytes   int
	closed  bool
	writing bool // a writer goroutine runs, or the last one finished for good
}

func newOutbox(maxFrames, maxBytes int) *outbox {
	return &outbox{maxFrames: maxFrames, maxBytes: maxBytes}
}

// limit lowers the bounds to at most maxFrames and maxBytes (a spectator's
// queue is shorter than a seat's); frames already queued stay.
func (o *outbox) limit(maxFrames, maxBytes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.maxFrames, o.maxBytes = min(o.maxFrames, maxFrames), min(o.maxBytes, maxBytes)
}

// push appends frames atomically (all or none). ok is false when the bounds
// would be exceeded; push returns ok without queuing anything once the
// outbox is closed (the frames are simply not wanted any more). start says
// that no writer runs and the caller must start one.
func (o *outbox) push(frames ...[]byte) (ok, start bool) {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return true, false
	}
	if len(o.frames)+len(frames) > o.maxFrames || o.bytes+n > o.maxBytes {
		return false, false
	}
	o.frames = append(o.frames, frames...)
	o.bytes += n
	return true, o.claimLocked()
}

// claim reports whether the caller must start a writer (none runs); it
// then counts as running.
func (o *outbox) claim() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.claimLocked()
}

func (o *outbox) claimLocked() bool {
	if o.writing {
		return false
	}
	o.writing = true
	return true
}

// release ends the running writer's turn if nothing is queued and stop has
// not been closed; otherwise the writer must go on. Checking stop under the
// same lock as claim means a shutdown that claims after closing stop either
// starts a new writer or finds this one still going: never neither.
func (o *outbox) release(stop <-chan struct{}) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.frames) > 0 {
		return false
	}
	select {
	case <-stop:
		return false
	default:
	}
	o.writing = false
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
