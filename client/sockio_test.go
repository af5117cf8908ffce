package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/matchgrain/matchgrain/internal/sockio"
)

// TestDialedSocketsAreRaw: both transports' sockets read and write through
// package sockio on Linux, as the server's do.
func TestDialedSocketsAreRaw(t *testing.T) {
	want := runtime.GOOS == "linux"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := up.Upgrade(w, r, nil); err == nil {
			defer c.Close()
			_, _, _ = c.ReadMessage()
		}
	}))
	defer srv.Close()
	ws, err := Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if got := sockio.Raw(ws.ws.NetConn()); got != want {
		t.Fatalf("WebSocket connection raw: %v, want %v on %s", got, want, runtime.GOOS)
	}

	// The TCP transport dials the same way; the HTTP server accepts the
	// socket and waits for a request that never comes, which is enough here.
	tcp, err := Dial(ctx, "tcp://"+srv.Listener.Addr().String(), DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	if got := sockio.Raw(tcp.tcp); got != want {
		t.Fatalf("TCP connection raw: %v, want %v on %s", got, want, runtime.GOOS)
	}
}
