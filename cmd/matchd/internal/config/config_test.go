package config

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSecurityFlags: the limit and secret flags reach the options, from the
// command line and from MATCHD_ variables, and bad ones are refused with
// the flag's name and without echoing the secret.
func TestSecurityFlags(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	t.Setenv("MATCHD_MAX_CONNECTIONS_PER_ADDRESS", "7")
	t.Setenv("MATCHD_GOSSIP_KEY", key)
	o, err := Parse([]string{"--max-handshakes", "9", "--http-header-timeout", "3s", "--intents-per-second", "2.5",
		"--admin-tokens-previous", "old1, old2", "--metrics-listen", "127.0.0.1:0", "--insecure-cluster"})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case o.Edge.MaxConnectionsPerAddress != 7, o.Edge.MaxHandshakes != 9, o.Edge.HTTPHeaderTimeout != 3*time.Second,
		o.Edge.IntentsPerSecond != 2.5, !slices.Equal(o.Edge.AdminTokensPrevious, []string{"old1", "old2"}),
		o.MetricsListen != "127.0.0.1:0", !o.Edge.SeparateMetrics,
		len(o.Cluster.Security.GossipKeys) != 1, !o.Cluster.Security.Insecure:
		t.Fatalf("options %+v", o)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--gossip-key", "not base64!"}, "gossip-key: gossip key 1 is not base64"},
		{[]string{"--gossip-key", base64.StdEncoding.EncodeToString([]byte("short"))}, "gossip-key: gossip key 1: key is 5 bytes, want 16, 24 or 32"},
		{[]string{"--cluster-tls-cert", "c.pem"}, "cluster-tls-cert, cluster-tls-key and cluster-tls-ca go together"},
	} {
		_, err := Parse(tt.args)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) = %v, want %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "not base64!") {
			t.Errorf("error echoes the key: %v", err)
		}
	}
}

// TestRequestTimeoutFollowsDetection: the edge's patience for a match is
// derived from failure detection unless set, so a slower detection (the
// -race chaos cluster's 2 s probes) does not make players see 4500 in the
// middle of a failover; it must stay below the heartbeat timeout, and the
// default HTTP write deadline follows it.
func TestRequestTimeoutFollowsDetection(t *testing.T) {
	for _, tt := range []struct {
		args            []string
		want, wantWrite time.Duration
	}{
		{nil, 10 * time.Second, 15 * time.Second},
		// 2·2 s + 3·3·2 s of detection, + 5 s for the activation.
		{[]string{"--probe-interval", "2s"}, 27 * time.Second, 32 * time.Second},
		{[]string{"--probe-interval", "2s", "--request-timeout", "4s"}, 4 * time.Second, 15 * time.Second},
	} {
		o, err := Parse(tt.args)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.args, err)
		}
		if o.Edge.RequestTimeout != tt.want || o.Edge.HTTPWriteTimeout != tt.wantWrite {
			t.Errorf("Parse(%q): request-timeout %v, http-write-timeout %v; want %v, %v",
				tt.args, o.Edge.RequestTimeout, o.Edge.HTTPWriteTimeout, tt.want, tt.wantWrite)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--probe-interval", "4s"}, "request-timeout (49s) must be positive and shorter than heartbeat-timeout (40s)"},
		{[]string{"--request-timeout", "20s", "--http-write-timeout", "20s"}, "http-write-timeout (20s) must be longer than request-timeout (20s): an API response is written after its call"},
	} {
		if _, err := Parse(tt.args); err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) = %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestDebugListenLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6060": true, "[::1]:6060": true, "localhost:6060": true, "127.0.0.2:0": true,
		"0.0.0.0:6060": false, ":6060": false, "10.1.2.3:6060": false, "example.com:6060": false, "6060": false,
	} {
		err := DebugLoopbackOnly(addr)
		if (err == nil) != ok {
			t.Errorf("DebugLoopbackOnly(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
	if _, err := Parse([]string{"--debug-listen", "0.0.0.0:6060"}); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("Parse accepted a non-loopback --debug-listen: %v", err)
	}
	o, err := Parse(nil)
	if err != nil || o.DebugListen != "" {
		t.Errorf("--debug-listen must be off by default: %q, %v", o.DebugListen, err)
	}
}

// TestMaxClockSkew: the request deadlines' allowance for clock skew
// defaults to the grains' default and must be positive (0 would drop a
// request the moment a receiver's clock is a nanosecond ahead).
func TestMaxClockSkew(t *testing.T) {
	o, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxClockSkew != time.Second {
		t.Fatalf("default max-clock-skew %v, want 1s", o.MaxClockSkew)
	}
	t.Setenv("MATCHD_MAX_CLOCK_SKEW", "2500ms")
	if o, err = Parse(nil); err != nil || o.MaxClockSkew != 2500*time.Millisecond {
		t.Fatalf("MATCHD_MAX_CLOCK_SKEW=2500ms gave %v, %v", o.MaxClockSkew, err)
	}
	for _, v := range []string{"0s", "-1s"} {
		if _, err := Parse([]string{"--max-clock-skew", v}); err == nil || !strings.Contains(err.Error(), "max-clock-skew must be positive") {
			t.Errorf("--max-clock-skew %s: %v, want refused", v, err)
		}
	}
}

// TestGCPercents: the busy GOGC defaults to DefaultGCBusyPercent, and a
// quiet percent at or above the busy one (which would raise the goal when
// the node goes quiet), a busy one or a headroom out of range is refused.
func TestGCPercents(t *testing.T) {
	o, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.GCBusyPercent != DefaultGCBusyPercent || o.GCQuietPercent != 25 || o.GCMinHeadroom != 0 || o.GCHerdPercent != DefaultGCHerdPercent {
		t.Fatalf("defaults: busy %d, quiet %d, headroom %d, herd %d; want %d, 25, 0 (off) and %d",
			o.GCBusyPercent, o.GCQuietPercent, o.GCMinHeadroom, o.GCHerdPercent, DefaultGCBusyPercent, DefaultGCHerdPercent)
	}
	// A herd percent under a raised busy percent is not refused: the
	// governor never goes below the busy one.
	if o, err = Parse([]string{"--gc-busy-percent", "300"}); err != nil || o.GCHerdPercent != DefaultGCHerdPercent {
		t.Fatalf("busy 300 with the default herd percent: %d, %v", o.GCHerdPercent, err)
	}
	if o, err = Parse([]string{"--gc-herd-percent", "0"}); err != nil || o.GCHerdPercent != 0 {
		t.Fatalf("herd off: %d, %v", o.GCHerdPercent, err)
	}
	if o, err = Parse([]string{"--gc-min-headroom-mib", "16"}); err != nil || o.GCMinHeadroom != 16<<20 {
		t.Fatalf("headroom 16 MiB: %d, %v", o.GCMinHeadroom, err)
	}
	if o, err = Parse([]string{"--gc-busy-percent", "100", "--gc-quiet-percent", "0"}); err != nil || o.GCBusyPercent != 100 || o.GCQuietPercent != 0 {
		t.Fatalf("busy 100, governor off: %+v, %v", o.GCBusyPercent, err)
	}
	for _, args := range [][]string{
		{"--gc-busy-percent", "9"},
		{"--gc-busy-percent", "1001"},
		{"--gc-busy-percent", "40", "--gc-quiet-percent", "40"},
		{"--gc-quiet-percent", "60"},
		{"--gc-quiet-percent", "-1"},
		{"--gc-min-headroom-mib", "-1"},
		{"--gc-min-headroom-mib", "4097"},
		{"--gc-herd-percent", "9"},
		{"--gc-herd-percent", "1001"},
	} {
		if _, err := Parse(args); err == nil || !strings.Contains(err.Error(), "gc-") {
			t.Errorf("%v: %v, want refused", args, err)
		}
	}
}
