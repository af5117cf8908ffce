package protocol

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// allocatedBytes runs f n times and returns the bytes it allocated per run.
func allocatedBytes(n int, f func()) uint64 {
	f() // warm up pools and lazy initialisation
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}

// fastest returns the shortest of n timed runs of f, which filters out
// scheduler noise on a shared machine.
func fastest(n int, f func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for i := 0; i < n; i++ {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

// nastyInputs are hostile client frames; each must be rejected quickly, with
// a typed error and little memory, whatever the library would have done.
func nastyInputs(t testing.TB) map[string][]byte {
	garbage := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	deep := bytes.Repeat([]byte{0x91}, 100_000)
	return map[string][]byte{
		// 7 bytes: a str32 header claiming 4 GiB for ClientHello.ticket.
		"str32 claims 4 GiB":      unhex(t, "92 00 94 01 db ffffffff"),
		"str32 claims 4 GiB, pad": append(unhex(t, "92 05 91 db ffffffff"), make([]byte, 1000)...),
		"array32 claims 4 Gi":     unhex(t, "92 04 dd ffffffff"),
		"map32 claims 4 Gi":       unhex(t, "92 04 92 00 df ffffffff"),
		"bin32 claims 4 GiB":      unhex(t, "92 04 92 00 c6 ffffffff"),
		"ext32 claims 4 GiB":      unhex(t, "92 04 92 00 c9 ffffffff 01"),
		"300 KiB frame":           make([]byte, 300<<10),
		"depth bomb 100000":       deep,
		"depth bomb in a body":    append(unhex(t, "92 01 93 a1 61 00 92 00 91"), deep...),
		"random garbage":          garbage,
		"long run of nils":        append(unhex(t, "92 04 dc 0100"), bytes.Repeat([]byte{0xc0}, 256)...),
	}
}

func TestNastyInputsRejectedCheaply(t *testing.T) {
	for name, b := range nastyInputs(t) {
		t.Run(name, func(t *testing.T) {
			var err error
			perRun := allocatedBytes(20, func() { _, err = DecodeClientFrame(b) })
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("err = %v, want a typed error", err)
			}
			// The error message and its wrapping; nothing proportional to a claimed length.
			if perRun > 2048 {
				t.Errorf("rejection allocates %d bytes per run", perRun)
			}
			// Generous for -race on a shared machine: real numbers are microseconds.
			if d := fastest(5, func() { _, err = DecodeClientFrame(b) }); d > 5*time.Millisecond {
				t.Errorf("rejection takes %v", d)
			}
			_, serr := DecodeServerFrame(b)
			if !errors.Is(serr, ErrMalformed) && !errors.Is(serr, ErrFrameTooLarge) {
				t.Errorf("server decoder: %v", serr)
			}
		})
	}
}

// Accepted frames allocate in proportion to what they hold, never more than
// the limits allow.
func TestAcceptedFrameAllocationIsBounded(t *testing.T) {
	b, err := EncodeClientFrame(&ClientIntent{IntentID: "3f2b8c1e-7d4a-4e55-9a10-2b6f0c9d8e71", BasedOnSeq: 57, Intent: Mulligan{HandIndexes: make([]int, MaxArrayLen)}})
	if err != nil {
		t.Fatal(err)
	}
	perRun := allocatedBytes(50, func() {
		if _, err := DecodeClientFrame(b); err != nil {
			t.Fatal(err)
		}
	})
	// The largest legal client frame body: 256 ints plus a few small objects.
	if perRun > 8*MaxArrayLen+512 {
		t.Errorf("decoding a maximal ClientIntent allocates %d bytes", perRun)
	}
}
