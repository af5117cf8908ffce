package edge

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

func validConfig() Config {
	return Config{TicketKey: bytes.Repeat([]byte{7}, 32), AdminToken: "token"}.withDefaults()
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(c *Config)
		want string
	}{
		{"defaults", func(*Config) {}, ""},
		{"short key", func(c *Config) { c.TicketKey = []byte("k") }, "ticket-key must be at least 32 bytes"},
		{"no token", func(c *Config) { c.AdminToken = "" }, "admin-token must not be empty"},
		{"short previous key", func(c *Config) { c.TicketPreviousKeys = [][]byte{[]byte("x")} }, "ticket-previous-keys[0] must be at least 32 bytes"},
		{"idle = timeout", func(c *Config) { c.HeartbeatIdle = c.HeartbeatTimeout }, "heartbeat-idle must be shorter than heartbeat-timeout"},
		{"idle > timeout", func(c *Config) { c.HeartbeatIdle = time.Minute }, "heartbeat-idle must be shorter than heartbeat-timeout"},
		{"negative hello", func(c *Config) { c.HelloTimeout = -1 }, "hello-timeout must be positive"},
		{"negative write", func(c *Config) { c.WriteTimeout = -time.Second }, "write-timeout must be positive"},
		{"negative ttl", func(c *Config) { c.TicketTTL = -time.Second }, "ticket-ttl must be positive"},
		{"negative linger", func(c *Config) { c.CloseLinger = -time.Second }, "close-linger must be positive"},
		{"rate", func(c *Config) { c.IntentsPerSecond = -1 }, "intents-per-second must be positive"},
		{"burst", func(c *Config) { c.IntentBurst = -1 }, "intent-burst must be at least 1"},
		{"abuse factor", func(c *Config) { c.AbuseFactor = 1 }, "abuse-factor must be greater than 1"},
		{"queue frames", func(c *Config) { c.OutboundQueueFrames = -1 }, "outbound-queue-frames must be at least 1"},
		{"queue bytes", func(c *Config) { c.OutboundQueueBytes = 1000 }, "outbound-queue-bytes must be at least 262144"},
		{"body", func(c *Config) { c.MaxBodyBytes = -1 }, "max-body-bytes must be positive"},
		{"origin", func(c *Config) { c.AllowedOrigins = []string{"game.example.com"} }, `allowed-origins: "game.example.com" is not an origin (scheme://host[:port])`},
		{"origin with path", func(c *Config) { c.AllowedOrigins = []string{"https://a.example/x"} }, `allowed-origins: "https://a.example/x" is not an origin (scheme://host[:port])`},
		{"origin star", func(c *Config) { c.AllowedOrigins = []string{"*", "https://a.example"} }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.mod(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := New(Config{AdminToken: "x"}, nil); err == nil || !strings.Contains(err.Error(), "ticket-key") {
		t.Errorf("New without key: %v", err)
	}
	if _, err := New(validConfig(), nil); err == nil || !strings.Contains(err.Error(), "matches must not be nil") {
		t.Errorf("New without matches: %v", err)
	}
}

func TestBucket(t *testing.T) {
	start := time.Unix(1000, 0)
	b := newBucket(16, 16, start)
	for i := range 16 {
		if !b.take(start) {
			t.Fatalf("token %d refused within the burst", i)
		}
	}
	if b.take(start) {
		t.Fatal("17th token at once granted")
	}
	// 1/16 s later exactly one more token.
	later := start.Add(time.Second / 16)
	if !b.take(later) || b.take(later) {
		t.Fatal("refill is not 16/s")
	}
	// Long idle refills only up to the burst.
	idle := later.Add(time.Hour)
	n := 0
	for b.take(idle) {
		n++
	}
	if n != 16 {
		t.Fatalf("after idle got %d tokens, want 16", n)
	}
}

// TestLimiterAbuse: the abuse bucket trips only on sustained floods over
// AbuseFactor × rate.
func TestLimiterAbuse(t *testing.T) {
	cfg := validConfig()
	start := time.Unix(1000, 0)
	run := func(perSecond float64, d time.Duration) bool {
		l := newLimiter(&cfg, start)
		step := time.Duration(float64(time.Second) / perSecond)
		for at := start; at.Before(start.Add(d)); at = at.Add(step) {
			if !l.abuse.take(at) {
				return true
			}
		}
		return false
	}
	cases := []struct {
		name  string
		rate  float64
		d     time.Duration
		trips bool
	}{
		{"at the limit for a minute", 16, time.Minute, false},
		{"3x for a minute", 48, time.Minute, false},
		{"5x for half a second", 80, 500 * time.Millisecond, false},
		{"5x for 15 s", 80, 15 * time.Second, true},
		{"50x for 3 s", 800, 3 * time.Second, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.rate, tc.d); got != tc.trips {
				t.Fatalf("tripped = %v, want %v", got, tc.trips)
			}
		})
	}
}

func TestOutboxBounds(t *testing.T) {
	o := newOutbox(3, 10)
	push := func(frames ...[]byte) bool {
		ok, _ := o.push(frames...)
		return ok
	}
	if ok, start := o.push([]byte("abcd"), []byte("efg")); !ok || !start {
		t.Fatalf("first push = %v, %v; want accepted and a writer to start", ok, start)
	}
	if push([]byte("abcd")) {
		t.Fatal("push over the byte bound accepted")
	}
	if ok, start := o.push([]byte("x")); !ok || start {
		t.Fatalf("push = %v, %v; want accepted, no second writer", ok, start)
	}
	if push([]byte("y")) {
		t.Fatal("push over the frame bound accepted")
	}
	got := o.take(nil)
	if len(got) != 3 || string(got[0]) != "abcd" || string(got[2]) != "x" {
		t.Fatalf("take = %q", got)
	}
	if !push([]byte("0123456789")) {
		t.Fatal("queue not emptied by take")
	}
	o.close()
	if !push([]byte("late")) || len(o.take(nil)) != 0 {
		t.Fatal("closed outbox queued a frame")
	}
}

// TestOutboxWriterTurns checks the hand-over between writer turns: one
// writer at a time, a release only with an empty queue and no stop, and a
// claim after stop finds either the running writer or starts one.
func TestOutboxWriterTurns(t *testing.T) {
	o := newOutbox(10, 100)
	stop := make(chan struct{})
	if !o.claim() {
		t.Fatal("claim with no writer running refused")
	}
	if o.claim() {
		t.Fatal("second claim granted while a writer runs")
	}
	if _, start := o.push([]byte("a")); start {
		t.Fatal("push started a writer while one runs")
	}
	if o.release(stop) {
		t.Fatal("writer released with a frame queued")
	}
	o.take(nil)
	if !o.release(stop) {
		t.Fatal("writer with an empty queue not released")
	}
	if _, start := o.push([]byte("b")); !start {
		t.Fatal("push after a release did not start a writer")
	}
	o.take(nil)
	close(stop)
	if o.release(stop) {
		t.Fatal("writer released after stop: nobody would say goodbye")
	}
	if o.claim() {
		t.Fatal("claim granted while the goodbye writer runs")
	}
}

func TestPeekIntentResult(t *testing.T) {
	cases := []protocol.ServerIntentResult{
		{IntentID: "a", Accepted: true, EventSeq: 5},
		{IntentID: strings.Repeat("x", 40), Code: protocol.RejectIllegal, Reason: "no", EventSeq: 1 << 40},
		{IntentID: "b", Code: protocol.RejectRateLimited, Duplicate: true},
		{IntentID: "c", Code: protocol.RejectStale, Duplicate: true, Reason: strings.Repeat("r", 300)},
	}
	for _, r := range cases {
		b, err := protocol.EncodeServerFrame(&r)
		if err != nil {
			t.Fatal(err)
		}
		code, dup, ok := peekIntentResult(b)
		if !ok || code != r.Code || dup != r.Duplicate {
			t.Errorf("peek(%+v) = %v %v %v", r, code, dup, ok)
		}
	}
	other, err := protocol.EncodeServerFrame(&protocol.ServerPong{Nonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{other, nil, {0x92, 0x03}, {0x92, 0x03, 0x96, 0xa5, 'x'}} {
		if _, _, ok := peekIntentResult(b); ok {
			t.Errorf("peek(%x) recognised an intent result", b)
		}
	}
}

func TestCloseReasons(t *testing.T) {
	seen := map[string]bool{}
	for r := CloseReason(1); r < reasonCount; r++ {
		in := r.info()
		if in.label == "" || in.label == "unknown" || seen[in.label] {
			t.Errorf("reason %d has label %q", r, in.label)
		}
		seen[in.label] = true
		if len(in.text) > 32 {
			t.Errorf("%s: close text %q too long", in.label, in.text)
		}
		for _, tcp := range []bool{false, true} {
			if ef, ok := r.errorFrame(tcp, 3); ok && (!ef.Fatal || ef.EventSeq != 3) {
				t.Errorf("%s: error frame %+v", in.label, ef)
			}
		}
		// Every reason that closes with a code other than 1000/1001 tells a
		// TCP client why with a ServerError.
		if c := r.CloseCode(); c >= 4000 {
			if _, ok := r.errorFrame(true, 0); !ok {
				t.Errorf("%s: close %d has no TCP ServerError", in.label, c)
			}
		}
	}
	full := ReasonSpectatorsFull
	if ef, ok := full.errorFrame(false, 0); full.CloseCode() != 4429 || !ok || ef.Code != protocol.ErrorSpectatorsFull {
		t.Errorf("spectators_full closes %d with %+v, want 4429 and SpectatorsFull (docs/protocol.md §14.7)", full.CloseCode(), ef)
	}
	if CloseReason(0).String() != "unknown" || CloseReason(99).String() != "unknown" {
		t.Error("out-of-range reasons are not labelled unknown")
	}
}

// FuzzPeekIntentResult: the metrics peek never panics on any frame bytes.
func FuzzPeekIntentResult(f *testing.F) {
	b, _ := protocol.EncodeServerFrame(&protocol.ServerIntentResult{IntentID: "x", Code: 2, Duplicate: true})
	f.Add(b)
	f.Add([]byte{0x92, 0x03, 0x96, 0xd9})
	f.Fuzz(func(t *testing.T, b []byte) {
		peekIntentResult(b)
	})
}

func TestAddrKeyGroupsIPv6By64(t *testing.T) {
	tcp := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s), Port: 1234} }
	tests := []struct {
		a, b net.Addr
		same bool
	}{
		{tcp("192.0.2.1"), tcp("192.0.2.1"), true},
		{tcp("192.0.2.1"), tcp("192.0.2.2"), false},
		{tcp("::ffff:192.0.2.1"), tcp("192.0.2.1"), true},
		{tcp("2001:db8:1:2::1"), tcp("2001:db8:1:2:ffff::9"), true},
		{tcp("2001:db8:1:2::1"), tcp("2001:db8:1:3::1"), false},
	}
	for _, tt := range tests {
		if got := addrKey(tt.a) == addrKey(tt.b); got != tt.same {
			t.Errorf("addrKey(%v)=%q, addrKey(%v)=%q: same %v, want %v", tt.a, addrKey(tt.a), tt.b, addrKey(tt.b), got, tt.same)
		}
	}
}
