package edge

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// countingConn counts the Write calls that reach the socket.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestWSBatchIsOneWrite sends batches over a real loopback WebSocket and
// checks that each batch reaches the socket in one Write and that the client
// reads every message intact and in order, including a frame larger than
// gorilla's write buffer and a ping answered while batches are going out.
func TestWSBatchIsOneWrite(t *testing.T) {
	type served struct {
		tr  *wsTransport
		cnt *countingConn
	}
	up := websocket.Upgrader{ReadBufferSize: 4 << 10, WriteBufferSize: 4 << 10}
	srv, cli := wsPair(t, up, func(c *websocket.Conn, cw *corkingWriter) served {
		cnt := &countingConn{Conn: cw.conn.Conn}
		cw.conn.Conn = cnt
		return served{newWSTransport(c, cw.conn, nil), cnt}
	})
	defer srv.tr.close()
	// The server side must read for gorilla to answer pings.
	go srv.tr.drain()

	big := bytes.Repeat([]byte{0xab}, 10<<10) // larger than the 4 KiB write buffer
	batches := [][][]byte{
		{[]byte("result"), []byte("events"), []byte("clock")},
		{big},
		{[]byte("a"), big, []byte("b")},
	}
	var want [][]byte
	for i, b := range batches {
		if i == 1 {
			if err := cli.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		before := srv.cnt.writes.Load()
		n, err := srv.tr.writeFrames(b, time.Now().Add(5*time.Second))
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		size := 0
		for _, f := range b {
			size += len(f)
		}
		if n != size {
			t.Errorf("batch %d: reported %d payload bytes, want %d", i, n, size)
		}
		// A pong may be written between batches by the reader goroutine;
		// the batch itself is one write.
		if w := srv.cnt.writes.Load() - before; w < 1 || w > 2 {
			t.Errorf("batch %d of %d frames took %d writes, want 1 (2 with a pong)", i, len(b), w)
		}
		want = append(want, b...)
	}
	pongs := make(chan string, 1)
	cli.SetPongHandler(func(s string) error { pongs <- s; return nil })
	_ = cli.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i, w := range want {
		mt, p, err := cli.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if mt != websocket.BinaryMessage || !bytes.Equal(p, w) {
			t.Fatalf("message %d: type %d, %d bytes %q..., want %d bytes", i, mt, len(p), fmt.Sprint(p[:min(len(p), 8)]), len(w))
		}
	}
	// The reader goroutine answers the ping whenever it gets to it: keep
	// sending marker batches (each read lets the client see a pong that came
	// first) until the pong is seen, for at most 5 s.
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case s := <-pongs:
			if s != "p" {
				t.Errorf("pong %q, want p", s)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the ping sent between batches was not answered within 5 s")
		}
		if _, err := srv.tr.writeFrames([][]byte{[]byte("m")}, time.Now().Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, p, err := cli.ReadMessage(); err != nil || string(p) != "m" {
			t.Fatalf("marker: %q, %v", p, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWSWaitReadableReleasesFrame: the last frame's buffer stays with the
// transport until the next read starts, and waitReadable is such a start,
// so a parked reader's connection holds no frame buffer while it waits.
func TestWSWaitReadableReleasesFrame(t *testing.T) {
	tr, cli := wsPair(t, websocket.Upgrader{WriteBufferSize: 4 << 10}, func(c *websocket.Conn, cw *corkingWriter) *wsTransport {
		return newWSTransport(c, cw.conn, cw.br)
	})
	defer tr.close()
	for i, msg := range []string{"hello", "ping"} {
		if err := cli.WriteMessage(websocket.BinaryMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if err := tr.setReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if err := tr.waitReadable(); err != nil {
				t.Fatalf("wait for the second frame: %v", err)
			}
		}
		b, err := tr.readFrame()
		if err != nil || string(b) != msg {
			t.Fatalf("frame %d: %q, %v; want %q", i, b, err, msg)
		}
		if tr.buf == nil {
			t.Fatalf("frame %d: no buffer held while the frame is valid", i)
		}
		// Nothing more comes: the wait ends at its deadline, and by then
		// the frame it followed has given its buffer back.
		if err := tr.setReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if err := tr.waitReadable(); !isTimeout(err) {
			t.Fatalf("wait with nothing sent: %v, want a timeout", err)
		}
		if tr.buf != nil {
			t.Fatalf("frame %d: the transport still holds its buffer while waiting", i)
		}
	}
}

// wsPair upgrades one loopback WebSocket connection with up through a
// corkingWriter, as the edge does, and returns what wrap makes of the
// server's side and the client's connection (closed at the test's end).
func wsPair[T any](t *testing.T, up websocket.Upgrader, wrap func(*websocket.Conn, *corkingWriter) T) (T, *websocket.Conn) {
	t.Helper()
	got := make(chan T, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &corkingWriter{ResponseWriter: w}
		c, err := up.Upgrade(cw, r, nil)
		if err != nil {
			t.Errorf("upgrade: %v", err)
			return
		}
		got <- wrap(c, cw)
	}))
	t.Cleanup(hs.Close)
	cli, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	select {
	case srv := <-got:
		return srv, cli
	case <-time.After(10 * time.Second):
		t.Fatal("no server connection")
		var none T
		return none, nil
	}
}
