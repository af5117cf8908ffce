package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
)

func validConfig() Config {
	return Config{
		GossipAddr:  "127.0.0.1:0",
		RemoteAddr:  "127.0.0.1:0",
		ClusterName: "test",
	}
}

func TestConfigValidate(t *testing.T) {
	kind := pcluster.NewKind("k", actor.PropsFromFunc(func(actor.Context) {}))
	tests := []struct {
		name   string
		modify func(*Config)
		want   string // exact message; "" means valid
	}{
		{"minimal", func(*Config) {}, ""},
		{"full", func(c *Config) {
			c.AdvertiseGossipAddr = "10.0.0.1:7946"
			c.Join = []string{"seed.example:7946", "10.0.0.2:7946"}
			c.RemoteAddr = "0.0.0.0:8090"
			c.AdvertiseRemoteAddr = "node-1.example:8090"
			c.Kinds = []*pcluster.Kind{kind}
			c.Security = Security{GossipKeys: [][]byte{make([]byte, 32)}, TLS: &TLSFiles{CertFile: "c", KeyFile: "k", CAFile: "ca"}}
		}, ""},
		{"exposed without key or TLS", func(c *Config) { c.GossipAddr = "10.0.0.1:7946" },
			`cluster: invalid config: unprotected member on a non-loopback address: 10.0.0.1:7946 not loopback and no gossip key and no remote TLS files: set them, or set Insecure (--insecure-cluster) on a network only members can reach`},
		{"advertised without TLS", func(c *Config) {
			c.AdvertiseRemoteAddr = "node-1.example:8090"
			c.Security.GossipKeyFile = "keys"
		}, `cluster: invalid config: unprotected member on a non-loopback address: node-1.example:8090 not loopback and no remote TLS files: set them, or set Insecure (--insecure-cluster) on a network only members can reach`},
		{"exposed but insecure on purpose", func(c *Config) {
			c.GossipAddr = "0.0.0.0:7946"
			c.Security.Insecure = true
		}, ""},
		{"localhost and ::1 are loopback", func(c *Config) { c.RemoteAddr = "localhost:0"; c.GossipAddr = "[::1]:0" }, ""},
		{"keys and key file", func(c *Config) {
			c.Security = Security{GossipKeys: [][]byte{make([]byte, 16)}, GossipKeyFile: "f"}
		}, "cluster: invalid config: set Security.GossipKeys or Security.GossipKeyFile, not both"},
		{"short gossip key", func(c *Config) { c.Security.GossipKeys = [][]byte{make([]byte, 20)} },
			"cluster: invalid config: Security.GossipKeys[0]: key is 20 bytes, want 16, 24 or 32"},
		{"partial TLS", func(c *Config) { c.Security.TLS = &TLSFiles{CertFile: "c"} },
			"cluster: invalid config: Security.TLS needs CertFile, KeyFile and CAFile"},
		{"no cluster name", func(c *Config) { c.ClusterName = "" },
			"cluster: invalid config: ClusterName is required"},
		{"long cluster name", func(c *Config) { c.ClusterName = strings.Repeat("x", 256) },
			"cluster: invalid config: ClusterName is 256 bytes, limit 255"},
		{"no gossip addr", func(c *Config) { c.GossipAddr = "" },
			"cluster: invalid config: GossipAddr is required"},
		{"gossip addr without port", func(c *Config) { c.GossipAddr = "127.0.0.1" },
			`cluster: invalid config: GossipAddr "127.0.0.1" is not host:port: address 127.0.0.1: missing port in address`},
		{"gossip addr by name", func(c *Config) { c.GossipAddr = "localhost:7946" },
			`cluster: invalid config: GossipAddr "localhost:7946" must use an IP address, not a name`},
		{"advertise gossip port 0", func(c *Config) { c.AdvertiseGossipAddr = "10.0.0.1:0" },
			`cluster: invalid config: AdvertiseGossipAddr "10.0.0.1:0" has an invalid port`},
		{"bad seed", func(c *Config) { c.Join = []string{"10.0.0.1:7946", "10.0.0.2"} },
			`cluster: invalid config: Join[1] "10.0.0.2" is not host:port: address 10.0.0.2: missing port in address`},
		{"no remote addr", func(c *Config) { c.RemoteAddr = "" },
			"cluster: invalid config: RemoteAddr is required"},
		{"remote port out of range", func(c *Config) { c.RemoteAddr = "127.0.0.1:70000" },
			`cluster: invalid config: RemoteAddr "127.0.0.1:70000" has an invalid port`},
		{"remote on all interfaces", func(c *Config) { c.RemoteAddr = "0.0.0.0:8090" },
			`cluster: invalid config: RemoteAddr "0.0.0.0:8090" binds all interfaces: set AdvertiseRemoteAddr to the address peers dial`},
		{"remote on empty host", func(c *Config) { c.RemoteAddr = ":8090" },
			`cluster: invalid config: RemoteAddr ":8090" binds all interfaces: set AdvertiseRemoteAddr to the address peers dial`},
		{"nil kind", func(c *Config) { c.Kinds = []*pcluster.Kind{nil} },
			"cluster: invalid config: Kinds[0] is nil or has no name or props"},
		{"duplicate kind", func(c *Config) { c.Kinds = []*pcluster.Kind{kind, kind} },
			`cluster: invalid config: kind "k" listed twice`},
		{"negative timeout", func(c *Config) { c.RequestTimeout = -time.Second },
			"cluster: invalid config: RequestTimeout must be positive, got -1s"},
		{"retry initial above max", func(c *Config) { c.Retry = Backoff{Initial: 2 * time.Second, Max: time.Second} },
			"cluster: invalid config: Retry.Initial (2s) must not exceed Retry.Max (1s)"},
		{"probe timeout not below interval", func(c *Config) {
			c.FailureDetection = FailureDetection{ProbeInterval: time.Second, ProbeTimeout: time.Second}
		}, "cluster: invalid config: FailureDetection.ProbeTimeout (1s) must be shorter than ProbeInterval (1s)"},
		{"default probe timeout above a short interval", func(c *Config) {
			c.FailureDetection = FailureDetection{ProbeInterval: 100 * time.Millisecond}
		}, "cluster: invalid config: FailureDetection.ProbeTimeout (200ms) must be shorter than ProbeInterval (100ms)"},
		{"negative suspicion", func(c *Config) { c.FailureDetection.SuspicionMult = -1 },
			"cluster: invalid config: FailureDetection.SuspicionMult must be positive, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.modify(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Fatalf("Validate() = %q\nwant          %q", err, tt.want)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
		})
	}
}

func TestStartRejectsInvalidConfig(t *testing.T) {
	_, err := Start(Config{})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Start(Config{}) = %v, want ErrInvalidConfig", err)
	}
}

func TestFailureDetectionDefaults(t *testing.T) {
	fd := FailureDetection{ProbeInterval: time.Second, ProbeTimeout: 300 * time.Millisecond}.withDefaults()
	d := DefaultFailureDetection()
	if fd.ProbeInterval != time.Second || fd.ProbeTimeout != 300*time.Millisecond {
		t.Fatalf("set fields overwritten: %+v", fd)
	}
	if fd.SuspicionMult != d.SuspicionMult || fd.GossipInterval != d.GossipInterval || fd.TCPTimeout != d.TCPTimeout {
		t.Fatalf("zero fields not defaulted: %+v", fd)
	}
	// memberlist must stay the only failure detector: protoactor's heartbeat
	// expiry has to be far behind the slowest memberlist detection.
	if hb, worst := d.heartbeatExpiration(), d.worstDetection(); hb < 2*worst || hb < minHeartbeatExpiration {
		t.Fatalf("heartbeat expiration %v too close to worst detection %v", hb, worst)
	}
}

// TestCrashDetection pins the bound the edge's patience is derived from
// (cmd/matchd): it must follow the probe interval and the suspicion knobs.
func TestCrashDetection(t *testing.T) {
	for _, c := range []struct {
		fd   FailureDetection
		want time.Duration
	}{
		{FailureDetection{}, 4400 * time.Millisecond},
		{FailureDetection{ProbeInterval: 2 * time.Second}, 22 * time.Second},
		{FailureDetection{ProbeInterval: time.Second, SuspicionMult: 4, SuspicionMaxTimeoutMult: 2}, 10 * time.Second},
	} {
		if got := c.fd.CrashDetection(); got != c.want {
			t.Errorf("%+v.CrashDetection() = %v, want %v", c.fd, got, c.want)
		}
	}
}
