package cluster_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/net/http2"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// cmdSendTo sends a message to a PID at the address given; result: "".
const cmdSendTo = "sendto"

// wantWindow is the flow-control window members announce to each other
// (cluster/config.go remoteWindowSize). gRPC keeps its dynamic window, and
// with it a bandwidth probe per data frame on a quiet link, unless both
// windows are set to at least HTTP/2's default; with them set it announces
// the stream window in SETTINGS and opens the connection window at once.
const wantWindow = 1 << 20

// TestRemoteWindowIsFixed reads the HTTP/2 settings a member announces on
// both ends of the links between members: as the server (a peer dials its
// remote address) and as the client (it dials a peer to send a message).
// Each must set the stream window and open the connection window to
// wantWindow, which turns gRPC's bandwidth probes off.
func TestRemoteWindowIsFixed(t *testing.T) {
	m := clustertest.StartMember(t, clustertest.MemberOptions{Name: "window"})

	t.Run("server", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", m.RemoteAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
			t.Fatal(err)
		}
		fr := http2.NewFramer(conn, conn)
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		checkWindow(t, fr)
	})

	t.Run("client", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := m.Call(ctx, cmdSendTo, l.Addr().String()); err != nil {
			t.Fatal(err)
		}
		if tl, ok := l.(*net.TCPListener); ok {
			if err := tl.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		conn, err := l.Accept()
		if err != nil {
			t.Fatalf("the member did not dial the peer: %v", err)
		}
		defer conn.Close()
		if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(conn, preface); err != nil || string(preface) != http2.ClientPreface {
			t.Fatalf("preface %q, %v", preface, err)
		}
		fr := http2.NewFramer(conn, conn)
		// gRPC's client waits for the server's settings before it sends
		// more than its own.
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		checkWindow(t, fr)
	})
}

// checkWindow reads frames until it has seen the peer's initial SETTINGS
// and a WINDOW_UPDATE of the connection, and fails unless they announce
// wantWindow.
func checkWindow(t *testing.T, fr *http2.Framer) {
	t.Helper()
	var settings, opened bool
	for !settings || !opened {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the member's frames (settings seen %v, connection window opened %v): %v", settings, opened, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			settings = true
			v, ok := f.Value(http2.SettingInitialWindowSize)
			if !ok || v != wantWindow {
				t.Fatalf("SETTINGS_INITIAL_WINDOW_SIZE is %d (set %v), want %d", v, ok, wantWindow)
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID != 0 {
				continue
			}
			opened = true
			// The connection starts at HTTP/2's 65,535 bytes.
			if got := 65535 + f.Increment; got != wantWindow {
				t.Fatalf("connection window opened to %d, want %d", got, wantWindow)
			}
		}
	}
}

// sendToHandler is cmdSendTo in the member child.
func sendToHandler(_ context.Context, n *cluster.Node, addr string) (string, error) {
	n.System().Root.Send(actor.NewPID(addr, "window-probe"), envelope.Wrap(&Get{}))
	return "", nil
}
