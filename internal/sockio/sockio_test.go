package sockio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/internal/proccpu"
)

// pair returns the two ends of a loopback TCP connection; client is wrapped
// when wrapped is true. Both are closed when the test ends.
func pair(t testing.TB, wrapped bool) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	server = <-accepted
	if server == nil {
		t.FailNow()
	}
	if wrapped {
		client = Wrap(client)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// variant names a subtest or sub-benchmark by the connection it uses.
func variant(wrapped bool) string {
	if wrapped {
		return "wrapped"
	}
	return "standard"
}

// both runs f against a standard connection and a wrapped one, so that every
// behaviour below is checked to be the standard one's too.
func both(t *testing.T, f func(t *testing.T, c, peer net.Conn)) {
	for _, wrapped := range []bool{false, true} {
		t.Run(variant(wrapped), func(t *testing.T) {
			c, peer := pair(t, wrapped)
			f(t, c, peer)
		})
	}
}

func TestWrapIsRawOnLinuxOnly(t *testing.T) {
	c, _ := pair(t, false)
	raw := Raw(Wrap(c))
	if Raw(c) {
		t.Fatal("Raw(standard TCP conn) = true")
	}
	if want := runtime.GOOS == "linux"; raw != want {
		t.Fatalf("Wrap(TCP conn) is raw: %v, want %v on %s", raw, want, runtime.GOOS)
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if got := Wrap(p1); got != p1 {
		t.Fatalf("Wrap(net.Pipe) = %T, want the pipe itself (it has no socket)", got)
	}
}

func TestLargeWritesArriveWholeAndInOrder(t *testing.T) {
	both(t, func(t *testing.T, c, peer net.Conn) {
		// Larger than loopback's socket buffers, read slowly: the writer
		// meets a full socket (EAGAIN) many times and must wait, not fail.
		want := make([]byte, 8<<20)
		for i := range want {
			want[i] = byte(i * 7)
		}
		got := make(chan []byte, 1)
		go func() {
			var buf bytes.Buffer
			chunk := make([]byte, 64<<10)
			for buf.Len() < len(want) {
				n, err := peer.Read(chunk)
				buf.Write(chunk[:n])
				if err != nil {
					break
				}
				time.Sleep(50 * time.Microsecond)
			}
			got <- buf.Bytes()
		}()
		if err := c.SetWriteDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := c.Write(want)
		if err != nil || n != len(want) {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(want))
		}
		if b := <-got; !bytes.Equal(b, want) {
			t.Fatalf("peer read %d bytes, not the %d written in order", len(b), len(want))
		}

		// And the other way: reads return what arrived, then wait for more.
		go func() {
			_, _ = peer.Write(want[:100])
			time.Sleep(10 * time.Millisecond)
			_, _ = peer.Write(want[100:300])
		}()
		buf := make([]byte, 300)
		if _, err := io.ReadFull(c, buf); err != nil || !bytes.Equal(buf, want[:300]) {
			t.Fatalf("ReadFull = %v, equal %v", err, bytes.Equal(buf, want[:300]))
		}
	})
}

func TestReadDeadline(t *testing.T) {
	both(t, func(t *testing.T, c, _ net.Conn) {
		if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		n, err := c.Read(make([]byte, 10))
		if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read = %d, %v; want 0 and a deadline error", n, err)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("error %v is not a net.Error with Timeout", err)
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "read" {
			t.Fatalf("error %v: want a *net.OpError with Op read", err)
		}
		if time.Since(start) < 15*time.Millisecond {
			t.Fatalf("Read returned after %v, before its deadline", time.Since(start))
		}
		// A deadline in the past fails at once, and clearing it reads again.
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read after the deadline = %v", err)
		}
	})
}

func TestWriteDeadlineWithAPeerThatDoesNotRead(t *testing.T) {
	both(t, func(t *testing.T, c, _ net.Conn) {
		if err := c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		big := make([]byte, 64<<20)
		n, err := c.Write(big)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Write = %d, %v; want a deadline error", n, err)
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "write" {
			t.Fatalf("error %v: want a *net.OpError with Op write", err)
		}
		if n < 0 || n >= len(big) {
			t.Fatalf("Write reported %d bytes written; want what the socket took (less than %d)", n, len(big))
		}
	})
}

func TestCloseUnblocksRead(t *testing.T) {
	both(t, func(t *testing.T, c, _ net.Conn) {
		errc := make(chan error, 1)
		go func() { _, err := c.Read(make([]byte, 1)); errc <- err }()
		time.Sleep(10 * time.Millisecond)
		c.Close()
		select {
		case err := <-errc:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Read after Close = %v; want net.ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Read still waiting 5 s after Close")
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Write after Close = %v; want net.ErrClosed", err)
		}
	})
}

func TestPeerCloseAndReset(t *testing.T) {
	both(t, func(t *testing.T, c, peer net.Conn) {
		if _, err := peer.Write([]byte("last")); err != nil {
			t.Fatal(err)
		}
		peer.(*net.TCPConn).CloseWrite()
		b, err := io.ReadAll(c)
		if err != nil || string(b) != "last" {
			t.Fatalf("ReadAll = %q, %v; want \"last\" then EOF", b, err)
		}
		if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("Read after EOF = %d, %v", n, err)
		}

		// The peer goes away hard: writes fail with the socket's own error.
		peer.(*net.TCPConn).SetLinger(0)
		peer.Close()
		deadline := time.Now().Add(5 * time.Second)
		var werr error
		for time.Now().Before(deadline) && werr == nil {
			_, werr = c.Write([]byte("are you there"))
		}
		if !errors.Is(werr, syscall.ECONNRESET) && !errors.Is(werr, syscall.EPIPE) {
			t.Fatalf("Write to a reset peer = %v; want ECONNRESET or EPIPE", werr)
		}
		var oe *net.OpError
		if !errors.As(werr, &oe) || oe.Op != "write" || oe.Addr == nil {
			t.Fatalf("error %v: want a *net.OpError with Op write and the peer's address", werr)
		}
	})
}

func TestCloseWriteHalfCloses(t *testing.T) {
	both(t, func(t *testing.T, c, peer net.Conn) {
		cw, ok := c.(interface{ CloseWrite() error })
		if !ok {
			t.Fatalf("%T has no CloseWrite", c)
		}
		if err := cw.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(peer); err != nil || len(b) != 0 {
			t.Fatalf("peer ReadAll = %q, %v; want EOF", b, err)
		}
		if _, err := peer.Write([]byte("still open")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "still open" {
			t.Fatalf("read after CloseWrite = %q, %v", buf, err)
		}
	})
}

func TestEmptyReadAndWrite(t *testing.T) {
	both(t, func(t *testing.T, c, _ net.Conn) {
		if n, err := c.Read(nil); n != 0 || err != nil {
			t.Fatalf("Read(nil) = %d, %v", n, err)
		}
		if n, err := c.Write(nil); n != 0 || err != nil {
			t.Fatalf("Write(nil) = %d, %v", n, err)
		}
	})
}

// TestNoAllocations: a Read or Write of the wrapped connection allocates
// nothing (the "no allocation per frame" on the write path).
func TestNoAllocations(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("wrapping is Linux only")
	}
	c, peer := pair(t, true)
	buf, back := make([]byte, 512), make([]byte, 512)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, back); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Write(back); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round trip, want 0", allocs)
	}
}

// BenchmarkPingPong sends one small frame each way per iteration between two
// goroutines over loopback, as a node answers an intent: the standard
// connection against the wrapped one (`go test -run '^$' -bench PingPong
// ./internal/sockio`). Besides the time per round trip it reports the
// process's CPU time per round trip (cpu-ns/op, user and system, from
// getrusage), which is what the wrapping is for.
func BenchmarkPingPong(b *testing.B) {
	for _, gap := range []time.Duration{0, 500 * time.Microsecond} {
		b.Run(fmt.Sprintf("gap=%v", gap), func(b *testing.B) { pingPong(b, gap) })
	}
}

// pingPong is BenchmarkPingPong with a pause of gap before each round trip:
// a node serving light matches sits idle between events, which is where
// the runtime's bookkeeping of system calls costs most.
func pingPong(b *testing.B, gap time.Duration) {
	for _, wrapped := range []bool{false, true} {
		b.Run(variant(wrapped), func(b *testing.B) {
			c, peer := pair(b, wrapped)
			if wrapped {
				peer = Wrap(peer)
			}
			go func() {
				buf := make([]byte, 64)
				for {
					if _, err := io.ReadFull(peer, buf); err != nil {
						return
					}
					if _, err := peer.Write(buf); err != nil {
						return
					}
				}
			}()
			buf := make([]byte, 64)
			cpu0 := proccpu.Self()
			b.ResetTimer()
			for range b.N {
				if gap > 0 {
					time.Sleep(gap)
				}
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(proccpu.Self()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func TestWrapDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	dial := WrapDial((&net.Dialer{}).DialContext)
	c, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, want := Raw(c), runtime.GOOS == "linux"; got != want {
		t.Fatalf("dialed connection raw: %v, want %v on %s", got, want, runtime.GOOS)
	}
	refused := errors.New("refused by the test")
	c, err = WrapDial(func(context.Context, string, string) (net.Conn, error) { return nil, refused })(context.Background(), "tcp", "x")
	if c != nil || !errors.Is(err, refused) {
		t.Fatalf("failed dial = %v, %v; want nil and the dialer's error", c, err)
	}
}

func TestWriteWithinAPeerThatDoesNotRead(t *testing.T) {
	both(t, func(t *testing.T, c, peer net.Conn) {
		big := make([]byte, 64<<20)
		start := time.Now()
		n, err := WriteWithin(c, big, start.Add(100*time.Millisecond))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("WriteWithin = %d, %v; want a deadline error", n, err)
		}
		if time.Since(start) < 90*time.Millisecond {
			t.Fatalf("WriteWithin gave up after %v, before its deadline", time.Since(start))
		}
		if n <= 0 || n >= len(big) {
			t.Fatalf("WriteWithin reported %d bytes written; want what the socket took (some, less than %d)", n, len(big))
		}
		// Once the peer reads again, the next write goes through: the
		// passed deadline does not stay behind to fail it.
		go func() { _, _ = io.Copy(io.Discard, peer) }()
		if _, err := WriteWithin(c, []byte("after"), time.Now().Add(5*time.Second)); err != nil {
			t.Fatalf("WriteWithin after a passed deadline: %v", err)
		}
	})
}

// A write that fits the socket's buffer never touches the deadline on a
// wrapped connection, so one already in the past does not fail it; the
// standard connection sets it and fails, as SetWriteDeadline then Write does.
func TestWriteWithinSetsTheDeadlineOnlyToWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("wrapping is Linux only")
	}
	past := time.Now().Add(-time.Second)
	for _, wrapped := range []bool{false, true} {
		t.Run(variant(wrapped), func(t *testing.T) {
			c, peer := pair(t, wrapped)
			n, err := WriteWithin(c, []byte("fits"), past)
			if !wrapped {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("standard WriteWithin = %d, %v; want a deadline error", n, err)
				}
				return
			}
			if err != nil || n != 4 {
				t.Fatalf("WriteWithin = %d, %v; want 4, nil", n, err)
			}
			got := make([]byte, 4)
			if _, err := io.ReadFull(peer, got); err != nil || string(got) != "fits" {
				t.Fatalf("peer read %q, %v", got, err)
			}
			// And it left no deadline behind: a plain write goes through.
			if _, err := c.Write([]byte("more")); err != nil {
				t.Fatalf("Write after WriteWithin: %v", err)
			}
		})
	}
}

func TestWriteWithinNoAllocations(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("wrapping is Linux only")
	}
	c, peer := pair(t, true)
	buf, back := make([]byte, 512), make([]byte, 512)
	deadline := time.Now().Add(time.Minute)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := WriteWithin(c, buf, deadline); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, back); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per write, want 0", allocs)
	}
}
