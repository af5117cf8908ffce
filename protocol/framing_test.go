package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"testing/iotest"
	"time"
)

// failAfter returns data, then fails the test if anything reads further:
// proof that a rejected frame's payload is never read.
type failAfter struct {
	t    *testing.T
	data []byte
}

func (f *failAfter) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		f.t.Error("FrameReader read past the length prefix of a rejected frame")
		return 0, errors.New("read past prefix")
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func framed(payloads ...[]byte) []byte {
	var buf bytes.Buffer
	for _, p := range payloads {
		buf.Write(AppendFrameHeader(nil, len(p)))
		buf.Write(p)
	}
	return buf.Bytes()
}

func TestFrameReaderReadsFrames(t *testing.T) {
	big := bytes.Repeat([]byte{0xab}, 100_000)
	payloads := [][]byte{[]byte("a"), big, []byte("hello"), bytes.Repeat([]byte{1}, MaxFrameBytes)}
	for _, tt := range []struct {
		name string
		r    func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"half reads", iotest.HalfReader},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fr := NewFrameReader(tt.r(bytes.NewReader(framed(payloads...))), 0)
			for i, want := range payloads {
				got, err := fr.ReadFrame()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("frame %d: %d bytes, want %d", i, len(got), len(want))
				}
			}
			if _, err := fr.ReadFrame(); err != io.EOF {
				t.Fatalf("at the end: %v, want io.EOF", err)
			}
		})
	}
}

func TestFrameReaderReusesBuffer(t *testing.T) {
	fr := NewFrameReader(bytes.NewReader(framed([]byte("first frame"), []byte("second"))), 0)
	a, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	b, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if &a[0] != &b[0] {
		t.Error("second frame did not reuse the buffer")
	}
	if string(b) != "second" {
		t.Errorf("got %q", b)
	}
	data := framed([]byte("0123456789"))
	allocs := testing.AllocsPerRun(100, func() {
		fr.r = bytes.NewReader(data)
		if _, err := fr.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	})
	// bytes.NewReader itself allocates once; the FrameReader must not.
	if allocs > 1 {
		t.Errorf("ReadFrame with a warm buffer allocates %.0f times", allocs)
	}
}

func TestFrameReaderRejectsWithoutReadingPayload(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		prefix []byte
		want   error
	}{
		{"zero length", 0, []byte{0, 0, 0, 0}, ErrMalformed},
		{"over MaxFrameBytes", 0, AppendFrameHeader(nil, MaxFrameBytes+1), ErrFrameTooLarge},
		{"4 GiB", 0, []byte{0xff, 0xff, 0xff, 0xff}, ErrFrameTooLarge},
		{"over a custom max", 10, AppendFrameHeader(nil, 11), ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []byte
			var err error
			perRun := allocatedBytes(20, func() {
				fr := NewFrameReader(&failAfter{t: t, data: tt.prefix}, tt.max)
				got, err = fr.ReadFrame()
			})
			if got != nil || !errors.Is(err, tt.want) {
				t.Fatalf("got %d bytes, %v; want %v", len(got), err, tt.want)
			}
			// The reader, its source and the error; never the payload.
			if perRun > 1024 {
				t.Errorf("rejection allocates %d bytes", perRun)
			}
		})
	}
}

func TestFrameReaderTruncated(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"inside the prefix", []byte{0, 0}},
		{"inside the payload", append(AppendFrameHeader(nil, 10), "abc"...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewFrameReader(bytes.NewReader(tt.data), 0).ReadFrame()
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
			}
		})
	}
	boom := errors.New("boom")
	_, err := NewFrameReader(iotest.ErrReader(boom), 0).ReadFrame()
	if !errors.Is(err, boom) {
		t.Fatalf("read error not wrapped: %v", err)
	}
}

// A peer that announces a large frame and sends little pins memory in
// proportion to what it sent, not to what it announced.
func TestFrameReaderGrowsWithData(t *testing.T) {
	data := append(AppendFrameHeader(nil, MaxFrameBytes), make([]byte, 100)...)
	fr := NewFrameReader(bytes.NewReader(data), 0)
	if _, err := fr.ReadFrame(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
	if c := cap(fr.buf); c > frameReadChunk {
		t.Errorf("buffer grew to %d bytes for 100 received", c)
	}
}

func TestWriteFrameRejects(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty: %v", err)
	}
	if err := WriteFrame(&buf, make([]byte, MaxFrameBytes+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %d bytes for rejected frames", buf.Len())
	}
	boom := errors.New("boom")
	if err := WriteFrame(errWriter{boom}, []byte("x")); !errors.Is(err, boom) {
		t.Errorf("write error not wrapped: %v", err)
	}
}

func TestWriteFrameDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	payload := make([]byte, 1000)
	allocs := testing.AllocsPerRun(100, func() {
		if err := WriteFrame(io.Discard, payload); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("WriteFrame allocates %.1f times", allocs)
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

// Frames written by WriteFrame over a real loopback TCP connection come back
// intact, in order, through FrameReader.
func TestFramingOverTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var frames [][]byte
	for _, f := range allServerFrames() {
		b, err := EncodeServerFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b)
	}
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		for _, b := range frames {
			if err := WriteFrame(c, b); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	fr := NewFrameReader(c, 0)
	for i, want := range frames {
		got, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d differs", i)
		}
		if _, err := DecodeServerFrame(got); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if _, err := fr.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("writer: %v", err)
	}
}

func ExampleFrameReader() {
	var conn bytes.Buffer // a net.Conn in real use
	payload, _ := EncodeClientFrame(&ClientPong{Nonce: 9})
	_ = WriteFrame(&conn, payload)

	fr := NewFrameReader(&conn, MaxFrameBytes)
	b, err := fr.ReadFrame() // valid until the next ReadFrame
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := DecodeClientFrame(b)
	fmt.Printf("%T %v %v\n", f, f.(*ClientPong).Nonce, err)
	// Output: *protocol.ClientPong 9 <nil>
}
