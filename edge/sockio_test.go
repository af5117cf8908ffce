package edge

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/internal/sockio"
)

// TestLimitedListenerConnsAreRaw: every connection the edge accepts (HTTP,
// WebSocket and TCP all come through limitedListener) reads and writes
// through package sockio on Linux, where the node's CPU per intent depends
// on it (docs/performance.md).
func TestLimitedListenerConnsAreRaw(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &limitedListener{Listener: ln, srv: &Server{limits: newConnLimiter(Config{MaxConnections: 1, MaxConnectionsPerAddress: 1, MaxHandshakes: 1})}}
	defer l.Close()
	go func() {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lc, ok := c.(*limitedConn)
	if !ok {
		t.Fatalf("Accept returned %T, want *limitedConn", c)
	}
	if got, want := sockio.Raw(lc.Conn), runtime.GOOS == "linux"; got != want {
		t.Fatalf("accepted connection raw: %v, want %v on %s", got, want, runtime.GOOS)
	}
}
