package edgetest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
)

// AdminToken is the admin bearer token of servers started by Start.
const AdminToken = "edgetest-admin-token"

// TicketKey is the ticket signing key of servers started by Start.
var TicketKey = []byte("edgetest-ticket-key-0123456789abcdef")

// Server is an edge.Server listening on random 127.0.0.1 ports: HTTP
// (WebSocket /game and the API) and the TCP fallback. Start shuts it down
// when the test ends.
type Server struct {
	Edge *edge.Server
	// HTTP serves Edge's handler, as matchd serves it (Edge.HTTPServer).
	HTTP *http.Server
	// HTTPURL is "http://127.0.0.1:port", WSURL the /game endpoint on the
	// same port, TCPAddr "127.0.0.1:port" of the TCP listener.
	HTTPURL string
	WSURL   string
	TCPAddr string
}

// Config returns the configuration Start uses before mod: the protocol's
// defaults with the test key and token, and short write and linger times.
func Config() edge.Config {
	return edge.Config{
		TicketKey:      TicketKey,
		AdminToken:     AdminToken,
		WriteTimeout:   2 * time.Second,
		RequestTimeout: 2 * time.Second,
		CloseLinger:    200 * time.Millisecond,
		Decks: func() []edge.DeckInfo {
			return []edge.DeckInfo{{ID: "S1", Name: "Emberwing", Cards: 50}, {ID: "S2", Name: "Tidewarden", Cards: 50}}
		},
	}
}

// Start runs an edge server in front of matches until the test ends. mod,
// if not nil, adjusts the configuration first.
func Start(t testing.TB, matches edge.Matches, mod func(*edge.Config)) *Server {
	t.Helper()
	cfg := Config()
	if mod != nil {
		mod(&cfg)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	srv, err := edge.New(cfg, matches)
	if err != nil {
		t.Fatalf("edgetest: edge.New: %v", err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("edgetest: listen http: %v", err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("edgetest: listen tcp: %v", err)
	}
	// As matchd serves it: the edge's HTTP deadlines and connection limits.
	hs := srv.HTTPServer()
	httpDone := make(chan error, 1)
	tcpDone := make(chan error, 1)
	go func() { httpDone <- hs.Serve(srv.LimitListener(hl)) }()
	go func() { tcpDone <- srv.ServeTCP(tl) }()
	t.Cleanup(func() {
		// Each stop gets its own budget: under -race on a loaded machine the
		// edge's drain can take most of a shared one (seen in CI).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("edgetest: edge shutdown: %v", err)
		}
		hctx, hcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer hcancel()
		if err := hs.Shutdown(hctx); err != nil {
			t.Errorf("edgetest: http shutdown: %v", err)
		}
		if err := <-httpDone; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("edgetest: http serve: %v", err)
		}
		if err := <-tcpDone; !errors.Is(err, edge.ErrServerClosed) {
			t.Errorf("edgetest: ServeTCP returned %v, want edge.ErrServerClosed", err)
		}
	})
	return &Server{
		Edge:    srv,
		HTTP:    hs,
		HTTPURL: "http://" + hl.Addr().String(),
		WSURL:   "ws://" + hl.Addr().String() + "/game",
		TCPAddr: tl.Addr().String(),
	}
}

// testWriter sends log lines to the test log; the server is shut down
// before the test ends, so no line comes later.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Ticket issues a ticket for seat of matchID, failing the test on error.
func (s *Server) Ticket(t testing.TB, matchID string, seat int) string {
	t.Helper()
	tk, err := s.Edge.Tickets().Issue(matchID, seat)
	if err != nil {
		t.Fatalf("edgetest: issue ticket: %v", err)
	}
	return tk.Token
}
