package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

// TCP framing (docs/protocol.md §2): each frame is a 4-byte big-endian payload
// length followed by the payload; the length excludes its own 4 bytes.

// FrameHeaderLen is the size of the TCP length prefix.
const FrameHeaderLen = 4

// frameReadChunk is how much a FrameReader's buffer grows at a time while a
// payload arrives, so that a peer announcing a large frame and sending
// nothing pins at most this much extra memory.
const frameReadChunk = 16 << 10

// WriteFrame writes payload to w with its length prefix in a single Write
// call (one syscall on a connection; prefix and payload are copied into a
// pooled buffer). A payload over MaxFrameBytes is ErrFrameTooLarge and an
// empty one ErrMalformed; nothing is written then. Like any write to a
// connection it must not run concurrently with another write to w (one writer
// goroutine per connection).
func WriteFrame(w io.Writer, payload []byte) error {
	if len(payload) == 0 {
		return fmt.Errorf("%w: empty frame", ErrMalformed)
	}
	if len(payload) > MaxFrameBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, len(payload), MaxFrameBytes)
	}
	bp := writeBufPool.Get().(*[]byte)
	buf := append(AppendFrameHeader((*bp)[:0], len(payload)), payload...)
	_, err := w.Write(buf)
	if cap(buf) <= maxPooledWriteBuf {
		*bp = buf
		writeBufPool.Put(bp)
	}
	if err != nil {
		return fmt.Errorf("protocol: write frame of %d bytes: %w", len(payload), err)
	}
	return nil
}

// maxPooledWriteBuf keeps rare large frames from pinning memory in the pool.
const maxPooledWriteBuf = 64 << 10

var writeBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// AppendFrameHeader appends the length prefix of an n-byte payload to dst.
// With AppendServerFrame it lets a writer build prefix and payload in one
// buffer: reserve FrameHeaderLen bytes, append the frame, then
// PutFrameHeader.
func AppendFrameHeader(dst []byte, n int) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// PutFrameHeader writes the length prefix of an n-byte payload into the first
// FrameHeaderLen bytes of b.
func PutFrameHeader(b []byte, n int) {
	binary.BigEndian.PutUint32(b[:FrameHeaderLen], uint32(n))
}

// FrameReader reads length-prefixed frames from a stream. It is not safe for
// concurrent use (one reader goroutine per connection).
//
// A length of 0 is ErrMalformed and a length over the limit ErrFrameTooLarge;
// both are reported after reading only the 4-byte prefix, without reading or
// allocating the payload. The stream is then out of step and the caller must
// close the connection (after a final ServerError on TCP).
type FrameReader struct {
	r   io.Reader
	max int
	hdr [FrameHeaderLen]byte
	buf []byte
}

// NewFrameReader returns a FrameReader on r that accepts payloads of 1..max
// bytes. A max of 0 or less means MaxFrameBytes.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	if max <= 0 {
		max = MaxFrameBytes
	}
	// The prefix is 32 bits, so larger limits change nothing.
	return &FrameReader{r: r, max: int(min(uint64(max), math.MaxUint32))}
}

// ReadFrame returns the next payload. The slice is owned by the FrameReader
// and valid only until the next ReadFrame call, which reuses its memory:
// decode it (DecodeClientFrame copies what it keeps) or copy it first.
//
// At a clean end of stream between frames it returns io.EOF; a stream that
// ends inside a frame gives io.ErrUnexpectedEOF. Other read errors are
// returned wrapped.
func (fr *FrameReader) ReadFrame() ([]byte, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("protocol: frame length prefix: %w", io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("protocol: read frame length: %w", err)
	}
	n := uint64(binary.BigEndian.Uint32(fr.hdr[:]))
	if n == 0 {
		return nil, fmt.Errorf("%w: empty frame", ErrMalformed)
	}
	if n > uint64(fr.max) {
		return nil, fmt.Errorf("%w: %d bytes announced, limit %d", ErrFrameTooLarge, n, fr.max)
	}
	size := int(n)
	// Grow the buffer as bytes arrive, not to the announced size at once:
	// memory then follows what the peer really sent.
	buf := fr.buf[:0]
	for len(buf) < size {
		if len(buf) == cap(buf) {
			newCap := min(max(2*cap(buf), frameReadChunk), size)
			grown := make([]byte, len(buf), newCap)
			copy(grown, buf)
			buf = grown
		}
		end := min(size, cap(buf))
		m, err := io.ReadFull(fr.r, buf[len(buf):end])
		buf = buf[:len(buf)+m]
		if err != nil {
			fr.buf = buf[:0]
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("protocol: frame payload (%d of %d bytes): %w", len(buf), size, io.ErrUnexpectedEOF)
			}
			return nil, fmt.Errorf("protocol: read frame payload: %w", err)
		}
	}
	fr.buf = buf[:0]
	return buf, nil
}
