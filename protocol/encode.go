package protocol

import (
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Encoding is hand-written per type on top of the msgpack low-level Encoder:
// no reflection, no struct tags, and the output is the canonical form of
// docs/protocol.md §3 (smallest integers, arrays for bodies, [key, body] for unions,
// nil for absent optionals, a nil slice as an empty array).
//
// The encoder functions never check per-field string limits (tests need to
// build over-limit frames); they do refuse nil union members, arrays over
// MaxArrayLen (except ServerEvents.events) and frames over MaxFrameBytes, so the
// server never sends what a conforming decoder must reject.

// EncodeClientFrame returns the canonical encoding of f in a new slice.
func EncodeClientFrame(f ClientFrame) ([]byte, error) {
	e := getEncoder()
	e.w.b = e.scratch[:0]
	e.clientFrame(f)
	out, err := e.copyOut()
	e.keepScratch()
	putEncoder(e)
	return out, err
}

// AppendClientFrame appends the canonical encoding of f to dst. On error it
// returns dst unchanged.
func AppendClientFrame(dst []byte, f ClientFrame) ([]byte, error) {
	e := getEncoder()
	e.w.b = dst
	e.clientFrame(f)
	out, err := e.appended(len(dst))
	putEncoder(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// EncodeServerFrame returns the canonical encoding of f in a new slice. A
// result over MaxFrameBytes is an error wrapping ErrFrameTooLarge: the sender
// must split a ServerEvents batch or answer with a snapshot instead.
func EncodeServerFrame(f ServerFrame) ([]byte, error) {
	e := getEncoder()
	e.w.b = e.scratch[:0]
	e.serverFrame(f)
	out, err := e.copyOut()
	e.keepScratch()
	putEncoder(e)
	return out, err
}

// AppendServerFrame appends the canonical encoding of f to dst. It lets a TCP
// writer reserve the 4-byte length prefix in dst and send one buffer. On error
// it returns dst unchanged.
func AppendServerFrame(dst []byte, f ServerFrame) ([]byte, error) {
	e := getEncoder()
	e.w.b = dst
	e.serverFrame(f)
	out, err := e.appended(len(dst))
	putEncoder(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// AppendEvent appends the encoding of one event union value [key, body], for
// journals that store events one by one. DecodeEvent reads it back.
func AppendEvent(dst []byte, ev Event) ([]byte, error) {
	e := getEncoder()
	e.w.b = dst
	e.event(ev)
	out, err := e.appended(len(dst))
	putEncoder(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// AppendIntent appends the encoding of one intent union value [key, body].
// DecodeIntent reads it back.
func AppendIntent(dst []byte, it Intent) ([]byte, error) {
	e := getEncoder()
	e.w.b = dst
	e.intent(it)
	out, err := e.appended(len(dst))
	putEncoder(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// sliceWriter is the writer under the msgpack Encoder: it appends to b and
// never fails, so the only encoder errors are ours.
type sliceWriter struct{ b []byte }

// Write implements io.Writer.
func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// WriteByte implements io.ByteWriter, which the msgpack Encoder uses for
// one-byte codes.
func (w *sliceWriter) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}

// encoder wraps a msgpack Encoder with a sticky error, so the per-type code
// reads as a list of fields.
type encoder struct {
	w       sliceWriter
	enc     *msgpack.Encoder
	err     error
	scratch []byte // reused output buffer of Encode*Frame
}

// maxPooledScratch keeps one unusually large frame from pinning memory in the pool.
const maxPooledScratch = MaxFrameBytes + 1024

var encoderPool = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = msgpack.NewEncoder(&e.w)
	return e
}}

func getEncoder() *encoder { return encoderPool.Get().(*encoder) }

// putEncoder returns e to the pool; it never keeps a caller's dst.
func putEncoder(e *encoder) {
	e.w.b = nil
	e.err = nil
	encoderPool.Put(e)
}

// keepScratch keeps the (possibly grown) scratch buffer for the next
// Encode*Frame call, unless it grew past maxPooledScratch.
func (e *encoder) keepScratch() {
	if cap(e.w.b) <= maxPooledScratch {
		e.scratch = e.w.b[:0]
	}
}

// copyOut checks the result and copies it out of the scratch buffer.
func (e *encoder) copyOut() ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	if len(e.w.b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: encoded %d bytes, limit %d", ErrFrameTooLarge, len(e.w.b), MaxFrameBytes)
	}
	out := make([]byte, len(e.w.b))
	copy(out, e.w.b)
	return out, nil
}

// appended checks what was appended after start.
func (e *encoder) appended(start int) ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	if n := len(e.w.b) - start; n > MaxFrameBytes {
		return nil, fmt.Errorf("%w: encoded %d bytes, limit %d", ErrFrameTooLarge, n, MaxFrameBytes)
	}
	return e.w.b, nil
}
