package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// Fuzz targets. Their seed corpus (every vector plus hostile inputs) runs in
// the normal go test; the long run is documented in docs/protocol.md:
//
//	go test ./protocol -run '^$' -fuzz FuzzDecodeClientFrame -fuzztime 10m

// seedFrames returns the hex of every vector of the direction plus hostile inputs.
func seedFrames(f *testing.F, dir string) [][]byte {
	var seeds [][]byte
	for _, v := range loadVectors(f).Vectors {
		if v.Direction != dir {
			continue
		}
		b, err := hex.DecodeString(v.Hex)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, b := range nastyInputs(f) {
		if len(b) > 4096 {
			// Keep the corpus small: the fuzzer finds long inputs by itself,
			// and TestNastyInputsRejectedCheaply covers the big ones.
			b = b[:4096]
		}
		seeds = append(seeds, b)
	}
	return seeds
}

func FuzzDecodeClientFrame(f *testing.F) {
	for _, b := range seedFrames(f, "client") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeClientFrame(b)
		if err != nil {
			switch {
			case errors.Is(err, ErrUnknownIntent):
				ci, ok := fr.(*ClientIntent)
				if !ok || ci.Intent != nil || ci.IntentID == "" || len(ci.IntentID) > MaxIntentIDLen {
					t.Fatalf("unknown intent returned %#v", fr)
				}
			case errors.Is(err, ErrMalformed), errors.Is(err, ErrFrameTooLarge):
				if fr != nil {
					t.Fatalf("frame %#v returned with %v", fr, err)
				}
			default:
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		checkClientLimits(t, fr)
		enc, err := EncodeClientFrame(fr)
		if err != nil {
			t.Fatalf("accepted frame does not encode: %v (%#v)", err, fr)
		}
		again, err := DecodeClientFrame(enc)
		if err != nil {
			t.Fatalf("canonical re-encoding %x rejected: %v", enc, err)
		}
		if !reflect.DeepEqual(fr, again) {
			t.Fatalf("decode→encode→decode changed the frame:\n%#v\n%#v", fr, again)
		}
		if enc2, err := EncodeClientFrame(again); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %x vs %x (%v)", enc, enc2, err)
		}
	})
}

// checkClientLimits asserts what an accepted client frame guarantees to the edge.
func checkClientLimits(t *testing.T, fr ClientFrame) {
	t.Helper()
	switch v := fr.(type) {
	case *ClientHello:
		if len(v.Ticket) > MaxTicketLen || len(v.ClientBuild) > MaxClientBuildLen {
			t.Fatalf("over-limit hello accepted: %d/%d bytes", len(v.Ticket), len(v.ClientBuild))
		}
	case *ClientIntent:
		if v.IntentID == "" || len(v.IntentID) > MaxIntentIDLen || v.Intent == nil {
			t.Fatalf("invalid intent accepted: %#v", v)
		}
	case *ClientLeave:
		if len(v.Reason) > MaxReasonLen {
			t.Fatalf("over-limit reason accepted")
		}
	}
}

func FuzzDecodeServerFrame(f *testing.F) {
	for _, b := range seedFrames(f, "server") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeServerFrame(b)
		if err != nil {
			if fr != nil || !(errors.Is(err, ErrMalformed) || errors.Is(err, ErrFrameTooLarge)) {
				t.Fatalf("got %#v, %v", fr, err)
			}
			return
		}
		enc, err := EncodeServerFrame(fr)
		if errors.Is(err, ErrFrameTooLarge) {
			// Short bodies expand to full ones; a near-limit input may not fit.
			return
		}
		if err != nil {
			t.Fatalf("accepted frame does not encode: %v", err)
		}
		again, err := DecodeServerFrame(enc)
		if err != nil {
			t.Fatalf("canonical re-encoding rejected: %v", err)
		}
		if !reflect.DeepEqual(fr, again) {
			t.Fatalf("decode→encode→decode changed the frame:\n%#v\n%#v", fr, again)
		}
	})
}

func FuzzFrameReader(f *testing.F) {
	f.Add(framed([]byte("a"), []byte("bc")), 16)
	f.Add([]byte{0, 0, 0, 0}, 16)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1}, 0)
	f.Add([]byte{0, 0, 0, 5, 1, 2}, 16)
	f.Add(append(framed([]byte(strings.Repeat("x", 40))), 0, 0), 64)
	f.Fuzz(func(t *testing.T, stream []byte, max int) {
		max %= 1 << 20
		fr := NewFrameReader(bytes.NewReader(stream), max)
		limit := max
		if limit <= 0 {
			limit = MaxFrameBytes
		}
		var rebuilt []byte
		for {
			p, err := fr.ReadFrame()
			if err != nil {
				switch {
				case err == io.EOF:
					if !bytes.Equal(rebuilt, stream) {
						t.Fatalf("clean EOF but frames do not rebuild the stream")
					}
				case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrMalformed), errors.Is(err, ErrFrameTooLarge):
				default:
					t.Fatalf("untyped error %v", err)
				}
				return
			}
			if len(p) == 0 || len(p) > limit {
				t.Fatalf("frame of %d bytes with limit %d", len(p), limit)
			}
			rebuilt = append(AppendFrameHeader(rebuilt, len(p)), p...)
			if !bytes.HasPrefix(stream, rebuilt) {
				t.Fatalf("frames do not match the stream")
			}
		}
	})
}
