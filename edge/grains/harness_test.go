package grains_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/grains"
	"github.com/matchgrain/matchgrain/edge/grains/grainstest"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/protocol"
)

// TestMain provides a PostgreSQL for the durability tests (a throwaway
// server unless DATABASE_URL is set).
func TestMain(m *testing.M) { pgtest.Main(m) }

// harnessOpts configures one in-process node. Zero values take the scaled
// defaults of startHarness.
type harnessOpts struct {
	timing   actors.Timing
	edge     edge.Config // only the timer fields and MaxSpectators are used
	postgres bool
}

// harness is one complete node in this process: a real cluster member
// hosting match grains of the real game, a store, the gateway, and an edge
// serving HTTP/WebSocket and TCP on random 127.0.0.1 ports.
type harness struct {
	admin    *client.Admin
	httpAddr string
	tcpAddr  string
	store    persistence.Store
	schema   string // PostgreSQL schema, "" for the embedded store
}

// fastTiming is DefaultTiming with the background timers scaled down; the
// decision, bank and absence timers stay long so they never fire unless a
// test shortens them.
func fastTiming() actors.Timing {
	t := actors.DefaultTiming()
	t.SeatKeepAlive = 100 * time.Millisecond
	// Not shorter than the bots' 2 s stall detector: every ServerClock
	// resets it (see the report on client/bots).
	t.ClockInterval = 5 * time.Second
	t.SnapshotEvery = 8
	t.IdleStop = 10 * time.Second
	return t
}

func randomHex(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random bytes: %v", err)
	}
	return b
}

func startHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	if o.timing == (actors.Timing{}) {
		o.timing = fastTiming()
	}
	log := slog.New(slog.DiscardHandler)
	h := &harness{}
	var store persistence.Store // nil: grainstest's embedded store
	if o.postgres {
		h.schema = pgtest.NewSchema(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := persistence.OpenPostgres(ctx, pgtest.URL(t), persistence.WithSchema(h.schema), persistence.WithLogger(log))
		if err != nil {
			t.Fatalf("open PostgreSQL store: %v", err)
		}
		// Registered before the member starts: closed after it is killed.
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close store: %v", err)
			}
		})
		store = s
	}
	matches, node := grainstest.NewMatches(t, grainstest.Options{Store: store, Timing: o.timing, Logger: log, MaxSpectators: o.edge.MaxSpectators})
	h.store = node.Store

	token := hex.EncodeToString(randomHex(t, 16))
	cfg := edge.Config{
		TicketKey: randomHex(t, 32), AdminToken: token, Decks: grains.DeckInfos, Logger: log,
		HelloTimeout: o.edge.HelloTimeout, HeartbeatIdle: o.edge.HeartbeatIdle, HeartbeatTimeout: o.edge.HeartbeatTimeout,
		CloseLinger: 100 * time.Millisecond, MaxSpectators: o.edge.MaxSpectators,
	}
	srv, err := edge.New(cfg, matches)
	if err != nil {
		t.Fatalf("edge: %v", err)
	}
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen http: %v", err)
	}
	tcpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen tcp: %v", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := hs.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("http serve: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		// ServeTCP returns once Shutdown closes the listener; its error then
		// only says so.
		_ = srv.ServeTCP(tcpLn) //nolint:errcheck // see above
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Logf("edge shutdown: %v", err)
		}
		if err := hs.Shutdown(ctx); err != nil {
			t.Logf("http shutdown: %v", err)
		}
		_ = tcpLn.Close() // already closed by Shutdown when it owns it
		wg.Wait()
	})
	h.httpAddr, h.tcpAddr = httpLn.Addr().String(), tcpLn.Addr().String()
	h.admin = client.NewAdmin("http://"+h.httpAddr, token, nil)
	return h
}

// gameAddr is the client address of the edge on transport "ws" or "tcp".
func (h *harness) gameAddr(transport string) string {
	if transport == "tcp" {
		return "tcp://" + h.tcpAddr
	}
	return "ws://" + h.httpAddr + "/game"
}

func (h *harness) createMatch(t *testing.T, seed uint64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id, err := h.admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "A", Deck: "S1"}, {Name: "B", Deck: "S2"}}, &seed)
	if err != nil {
		t.Fatalf("create match: %v", err)
	}
	return id
}

// dialSeat connects to addr with a fresh ticket for seat and returns the
// connection and its ServerHello.
func dialSeat(t *testing.T, h *harness, addr, matchID string, seat int, resume int64) (*clienttest.Seat, *protocol.ServerHello) {
	t.Helper()
	return clienttest.Dial(t, h.admin, addr, matchID, seat, clienttest.Options{Resume: resume, Build: "grains-e2e"})
}

// connectSeat dials and sends ClientHello without reading the answer.
func connectSeat(t *testing.T, h *harness, addr, matchID string, seat int, resume int64) *clienttest.Seat {
	t.Helper()
	return clienttest.Connect(t, h.admin, addr, matchID, seat, clienttest.Options{Resume: resume, Build: "grains-e2e"})
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// randomSeed is a random test's seed: MATCHGRAIN_SEED when set, to replay
// a logged run, else the clock.
func randomSeed(t *testing.T) uint64 {
	t.Helper()
	v := os.Getenv("MATCHGRAIN_SEED")
	if v == "" {
		return uint64(time.Now().UnixNano())
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("MATCHGRAIN_SEED=%q: %v", v, err)
	}
	return n
}

// recProxy sits between clients and the edge and records every byte the
// edge sends on each connection, exactly as it went over the wire.
type recProxy struct {
	ln     net.Listener
	target string
	ws     bool

	mu    sync.Mutex
	conns []*recConn
	wg    sync.WaitGroup
}

// recConn is one proxied connection's server-to-client bytes.
type recConn struct {
	mu         sync.Mutex
	down       bytes.Buffer
	client, up net.Conn
}

func (c *recConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down.Write(p)
	return len(p), nil
}

func (c *recConn) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.down.Bytes())
}

// startProxy proxies a listener on 127.0.0.1 to the edge's WebSocket
// ("ws") or TCP ("tcp") listener.
func startProxy(t *testing.T, h *harness, transport string) *recProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &recProxy{ln: ln, target: h.httpAddr, ws: transport == "ws"}
	if !p.ws {
		p.target = h.tcpAddr
	}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close() // stops serve
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.client.Close()
			_ = c.up.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *recProxy) addr() string {
	if p.ws {
		return "ws://" + p.ln.Addr().String() + "/game"
	}
	return "tcp://" + p.ln.Addr().String()
}

func (p *recProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		rc := &recConn{client: c, up: up}
		p.mu.Lock()
		p.conns = append(p.conns, rc)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(up, c) // ends when either side closes
			_ = up.Close()
			_ = c.Close()
		}()
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(io.MultiWriter(c, rc), up)
			_ = up.Close()
			_ = c.Close()
		}()
	}
}

// wireFrame is one server frame as recorded: its exact payload bytes and
// its decoded value.
type wireFrame struct {
	raw []byte
	f   protocol.ServerFrame
}

// stream is everything one connection received, in order.
type stream struct {
	wire   []byte // every byte, framing included
	frames []wireFrame
	seat   int // from the first ServerHello, -1 if none
}

// streams decodes every recorded connection.
func (p *recProxy) streams(t *testing.T) []stream {
	t.Helper()
	p.mu.Lock()
	conns := append([]*recConn(nil), p.conns...)
	p.mu.Unlock()
	var out []stream
	for i, c := range conns {
		wire := c.bytes()
		var payloads [][]byte
		var err error
		if p.ws {
			payloads, err = wsPayloads(wire)
		} else {
			payloads, err = tcpPayloads(wire)
		}
		if err != nil {
			t.Fatalf("connection %d: parse recorded bytes: %v", i, err)
		}
		s := stream{wire: wire, seat: -1}
		for _, b := range payloads {
			f, err := protocol.DecodeServerFrame(b)
			if err != nil {
				t.Fatalf("connection %d: decode recorded frame: %v", i, err)
			}
			if h, ok := f.(*protocol.ServerHello); ok && s.seat < 0 {
				s.seat = h.PlayerIndex
			}
			s.frames = append(s.frames, wireFrame{raw: b, f: f})
		}
		out = append(out, s)
	}
	return out
}

// bySeat groups streams per seat, in connection order.
func bySeat(ss []stream) [2][]stream {
	var out [2][]stream
	for _, s := range ss {
		if s.seat == 0 || s.seat == 1 {
			out[s.seat] = append(out[s.seat], s)
		}
	}
	return out
}

// tcpPayloads splits the TCP fallback's length-prefixed frames. A trailing
// partial frame (the connection was cut) is dropped.
func tcpPayloads(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		if n > protocol.MaxFrameBytes {
			return nil, fmt.Errorf("frame of %d bytes", n)
		}
		if len(b) < 4+n {
			break
		}
		out = append(out, b[4:4+n])
		b = b[4+n:]
	}
	return out, nil
}

// wsPayloads skips the HTTP upgrade answer and reassembles the binary
// messages of the WebSocket frames after it (RFC 6455 §5.2); control frames
// are skipped. A trailing partial frame is dropped.
func wsPayloads(b []byte) ([][]byte, error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, nil
	}
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 101")) {
		return nil, fmt.Errorf("no WebSocket upgrade: %q", b[:min(len(b), 40)])
	}
	b = b[end+4:]
	var out [][]byte
	var msg []byte
	inMsg := false
	for len(b) >= 2 {
		fin, op := b[0]&0x80 != 0, b[0]&0x0f
		masked := b[1]&0x80 != 0
		n := uint64(b[1] & 0x7f)
		hdr := 2
		switch n {
		case 126:
			if len(b) < 4 {
				return out, nil
			}
			n, hdr = uint64(binary.BigEndian.Uint16(b[2:])), 4
		case 127:
			if len(b) < 10 {
				return out, nil
			}
			n, hdr = binary.BigEndian.Uint64(b[2:]), 10
		}
		if masked {
			return nil, errors.New("the server masked a frame")
		}
		if n > protocol.MaxFrameBytes || uint64(len(b)-hdr) < n {
			break
		}
		payload := b[hdr : hdr+int(n)]
		b = b[hdr+int(n):]
		switch {
		case op == 2 || (op == 0 && inMsg):
			msg = append(msg, payload...)
			inMsg = true
			if fin {
				out = append(out, msg)
				msg, inMsg = nil, false
			}
		case op >= 8: // close, ping, pong
		default:
			return nil, fmt.Errorf("unexpected WebSocket opcode %d", op)
		}
	}
	return out, nil
}

// pgQueryRow runs one query against the test PostgreSQL and scans its row.
func pgQueryRow(t *testing.T, q string, arg any, dest ...any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }() // read-only connection
	if err := conn.QueryRow(ctx, q, arg).Scan(dest...); err != nil {
		return fmt.Errorf("query %q: %w", q, err)
	}
	return nil
}
