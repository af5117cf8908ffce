package edge_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/protocol"
)

const testAdminToken = edgetest.AdminToken

// newFakeMatches is the edge tests' Matches: edgetest's toy game.
func newFakeMatches(testing.TB) edge.Matches { return edgetest.NewMatches() }

// newMatchesFunc builds the Matches a harness serves. The edge's own tests
// use newFakeMatches; an end-to-end test passes a constructor that returns
// the real cluster gateway, and the transport-level behaviours must hold
// for it too.
type newMatchesFunc func(t testing.TB) edge.Matches

// harness is one edge Server on random 127.0.0.1 ports: HTTP (WebSocket and
// API) and TCP.
type harness struct {
	t       testing.TB
	srv     *edge.Server
	hs      *http.Server // serves srv's handler
	matches edge.Matches
	httpURL string
	wsURL   string
	tcpAddr string
}

// newHarness starts an edge server (edgetest.Start) with timers short enough
// for tests and long enough for -race on a busy machine, then mod. When the
// test ends the server shuts down and no session goroutine may remain.
func newHarness(t testing.TB, newMatches newMatchesFunc, mod func(*edge.Config)) *harness {
	t.Helper()
	// Registered first, so it runs after edgetest's shutdown.
	t.Cleanup(func() { checkNoSessionGoroutines(t) })
	matches := newMatches(t)
	s := edgetest.Start(t, matches, func(c *edge.Config) {
		c.HelloTimeout = 3 * time.Second
		c.HeartbeatIdle = 2 * time.Second
		c.HeartbeatTimeout = 4 * time.Second
		c.Logger = slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		if mod != nil {
			mod(c)
		}
	})
	return &harness{t: t, srv: s.Edge, hs: s.HTTP, matches: matches, httpURL: s.HTTPURL, wsURL: s.WSURL, tcpAddr: s.TCPAddr}
}

// testLogWriter sends the edge's log lines to the test log (shown with -v or
// on failure). Every session ends in Shutdown, before the test completes.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// checkNoSessionGoroutines fails if session goroutines outlive Shutdown.
func checkNoSessionGoroutines(t testing.TB) {
	t.Helper()
	var stacks string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "edge.(*session)") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("session goroutines still running after Shutdown:\n%s", stacks)
}

// newMatch creates a match through the Matches under test.
func (h *harness) newMatch() string {
	h.t.Helper()
	id, err := h.matches.CreateMatch(context.Background(), edge.MatchSpec{Names: [2]string{"Ann", "Bob"}, Decks: [2]string{"S1", "S2"}})
	if err != nil {
		h.t.Fatalf("create match: %v", err)
	}
	return id
}

func (h *harness) ticket(matchID string, seat int) string {
	h.t.Helper()
	tk, err := h.srv.Tickets().Issue(matchID, seat)
	if err != nil {
		h.t.Fatalf("issue ticket: %v", err)
	}
	return tk.Token
}

// pollFor retries check until it returns nil or total passes.
func pollFor(t testing.TB, total time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("condition not met within %v: %v", total, err)
}

// metric returns the value of one line of /metrics ("name{labels}").
func (h *harness) metric(series string) (float64, error) {
	resp, err := http.Get(h.httpURL + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("get metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				return 0, fmt.Errorf("parse %q: %w", line, err)
			}
			return f, nil
		}
	}
	return 0, fmt.Errorf("series %s not found", series)
}

// ---- raw test clients -------------------------------------------------------

// closed is how a connection ended as the client saw it.
type closed struct {
	// wsCode is the WebSocket close code (0 on TCP or without a close frame).
	wsCode int
	// lastError is the last ServerError received, if any.
	lastError *protocol.ServerError
}

// testConn is a raw client connection that can send arbitrary bytes.
type testConn interface {
	sendRaw(b []byte)
	// read returns the next server frame, or an error at the end.
	read(timeout time.Duration) (protocol.ServerFrame, error)
	close()
	transport() string
	// raw is the socket under the connection, for writing bytes as they are.
	raw() net.Conn
}

func send(t testing.TB, c testConn, f protocol.ClientFrame) {
	t.Helper()
	b, err := protocol.EncodeClientFrame(f)
	if err != nil {
		t.Fatalf("encode %T: %v", f, err)
	}
	c.sendRaw(b)
}

type wsTestConn struct {
	t testing.TB
	c *websocket.Conn
}

func dialWS(t testing.TB, h *harness, header http.Header) *wsTestConn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial(h.wsURL, header)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (HTTP %d)", h.wsURL, err, status)
	}
	tc := &wsTestConn{t: t, c: c}
	t.Cleanup(tc.close)
	return tc
}

func (c *wsTestConn) sendRaw(b []byte) { c.sendMessage(websocket.BinaryMessage, b) }

func (c *wsTestConn) sendMessage(mt int, b []byte) {
	c.t.Helper()
	if err := c.c.SetWriteDeadline(time.Now().Add(5 * time.Second)); err != nil {
		c.t.Fatalf("set write deadline: %v", err)
	}
	if err := c.c.WriteMessage(mt, b); err != nil {
		c.t.Fatalf("ws write: %v", err)
	}
}

func (c *wsTestConn) read(timeout time.Duration) (protocol.ServerFrame, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("set read deadline: %w", err)
	}
	mt, b, err := c.c.ReadMessage()
	if err != nil {
		return nil, err
	}
	if mt != websocket.BinaryMessage {
		return nil, fmt.Errorf("server sent message type %d", mt)
	}
	return protocol.DecodeServerFrame(b)
}

func (c *wsTestConn) close()            { _ = c.c.Close() }
func (c *wsTestConn) raw() net.Conn     { return c.c.NetConn() }
func (c *wsTestConn) transport() string { return "ws" }

type tcpTestConn struct {
	t  testing.TB
	c  net.Conn
	fr *protocol.FrameReader
}

func dialTCP(t testing.TB, h *harness) *tcpTestConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", h.tcpAddr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial tcp %s: %v", h.tcpAddr, err)
	}
	tc := &tcpTestConn{t: t, c: c, fr: protocol.NewFrameReader(c, protocol.MaxFrameBytes)}
	t.Cleanup(tc.close)
	return tc
}

func (c *tcpTestConn) sendRaw(b []byte) {
	c.t.Helper()
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	c.sendBytes(append(hdr[:], b...))
}

// sendBytes writes bytes without framing.
func (c *tcpTestConn) sendBytes(b []byte) {
	c.t.Helper()
	if err := c.c.SetWriteDeadline(time.Now().Add(5 * time.Second)); err != nil {
		c.t.Fatalf("set write deadline: %v", err)
	}
	if _, err := c.c.Write(b); err != nil {
		c.t.Fatalf("tcp write: %v", err)
	}
}

func (c *tcpTestConn) read(timeout time.Duration) (protocol.ServerFrame, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("set read deadline: %w", err)
	}
	b, err := c.fr.ReadFrame()
	if err != nil {
		return nil, err
	}
	return protocol.DecodeServerFrame(b)
}

func (c *tcpTestConn) close()            { _ = c.c.Close() }
func (c *tcpTestConn) raw() net.Conn     { return c.c }
func (c *tcpTestConn) transport() string { return "tcp" }

func dial(t testing.TB, h *harness, transport string) testConn {
	t.Helper()
	if transport == "tcp" {
		return dialTCP(t, h)
	}
	return dialWS(t, h, nil)
}

var transports = []string{"ws", "tcp"}

// expectFrame reads frames until one of type T arrives and returns it. Other
// frames (clocks, pings, events of the other seat...) are skipped; a fatal
// ServerError or the end of the connection fails the test.
func expectFrame[T protocol.ServerFrame](t testing.TB, c testConn, timeout time.Duration) T {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var zero T
	for {
		f, err := c.read(time.Until(deadline))
		if err != nil {
			t.Fatalf("%s: waiting for %T: %v", c.transport(), zero, err)
		}
		if v, ok := f.(T); ok {
			return v
		}
		if e, ok := f.(*protocol.ServerError); ok && e.Fatal {
			t.Fatalf("%s: waiting for %T: got %+v", c.transport(), zero, *e)
		}
	}
}

// readUntilClosed reads everything until the connection ends and reports how.
func readUntilClosed(t testing.TB, c testConn, timeout time.Duration) closed {
	t.Helper()
	var res closed
	deadline := time.Now().Add(timeout)
	for {
		f, err := c.read(time.Until(deadline))
		if err != nil {
			var ce *websocket.CloseError
			switch {
			case errors.As(err, &ce):
				res.wsCode = ce.Code
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isReset(err):
			default:
				t.Fatalf("%s: connection did not close within %v: %v", c.transport(), timeout, err)
			}
			return res
		}
		if e, ok := f.(*protocol.ServerError); ok {
			res.lastError = e
		}
	}
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

// want describes how the server must end a connection on each transport.
type want struct {
	wsCode int
	// wsErr is the ServerError expected before the WebSocket close, -1: none.
	wsErr protocol.ErrorCode
	// tcpErr is the final fatal ServerError on TCP, -1: none.
	tcpErr protocol.ErrorCode
}

func (w want) check(t testing.TB, c testConn, got closed) {
	t.Helper()
	wantErr := w.wsErr
	if c.transport() == "tcp" {
		wantErr = w.tcpErr
	} else if got.wsCode != w.wsCode {
		t.Errorf("ws close code = %d, want %d", got.wsCode, w.wsCode)
	}
	switch {
	case wantErr < 0 && got.lastError != nil:
		t.Errorf("%s: unexpected ServerError %+v", c.transport(), *got.lastError)
	case wantErr >= 0 && got.lastError == nil:
		t.Errorf("%s: no ServerError, want code %d", c.transport(), wantErr)
	case wantErr >= 0 && (got.lastError.Code != wantErr || !got.lastError.Fatal):
		t.Errorf("%s: ServerError %+v, want fatal code %d", c.transport(), *got.lastError, wantErr)
	case got.lastError != nil && !isShortASCII(got.lastError.Message):
		t.Errorf("%s: ServerError message %q is not short ASCII", c.transport(), got.lastError.Message)
	}
}

func isShortASCII(s string) bool {
	if len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// hello sends ClientHello and expects ServerHello.
func hello(t testing.TB, c testConn, ticket string, resumeFrom int64) *protocol.ServerHello {
	t.Helper()
	send(t, c, &protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: ticket, ClientBuild: "edge-test", ResumeFromSeq: resumeFrom})
	return expectFrame[*protocol.ServerHello](t, c, 5*time.Second)
}
