package cluster_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/cluster/envelope"
)

func keysHandler(_ context.Context, n *cluster.Node, _ string) (string, error) {
	return strings.Join(n.GossipKeys(), ","), nil
}

func pidHandler(ctx context.Context, n *cluster.Node, identity string) (string, error) {
	// Activate it first, so that the PID names a live grain.
	if _, err := incHandler(ctx, n, identity+" 0"); err != nil {
		return "", err
	}
	pid := n.Cluster().Get(identity, counterKindName)
	if pid == nil {
		return "", fmt.Errorf("no PID for %s", identity)
	}
	return pid.Address + " " + pid.Id, nil
}

func newGossipKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// count reads a counter through member m (Inc by 0).
func count(t *testing.T, m *clustertest.Member, identity string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := m.Call(ctx, cmdInc, identity+" 0")
	if err != nil {
		t.Fatal(err)
	}
	var c Count
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	return c.N
}

func membersSeen(t *testing.T, m *clustertest.Member) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ms, err := m.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

// TestClusterGossipKeyRefusesOthers: a member with another key, or with
// none, never joins a keyed cluster, and the keyed member logs the refusal;
// a member with the right key joins (the control that shows the others had
// every chance).
func TestClusterGossipKeyRefusesOthers(t *testing.T) {
	key, other := newGossipKey(t), newGossipKey(t)
	fd := clustertest.RelaxedFailureDetection()
	seed := clustertest.StartMember(t, clustertest.MemberOptions{Name: "keyed", ClusterName: "keys", GossipAddr: clustertest.FreeAddr(t),
		FailureDetection: fd, Security: cluster.Security{GossipKeys: [][]byte{key}}})
	join := []string{seed.GossipAddr}
	wrong := clustertest.StartMember(t, clustertest.MemberOptions{Name: "wrong-key", ClusterName: "keys", Join: join,
		FailureDetection: fd, Security: cluster.Security{GossipKeys: [][]byte{other}}})
	none := clustertest.StartMember(t, clustertest.MemberOptions{Name: "no-key", ClusterName: "keys", Join: join, FailureDetection: fd})
	right := clustertest.StartMember(t, clustertest.MemberOptions{Name: "right-key", ClusterName: "keys", Join: join,
		FailureDetection: fd, Security: cluster.Security{GossipKeys: [][]byte{key, other}}})
	clustertest.WaitMembers(t, 30*time.Second, 2, seed, right)
	// The outsiders retry their join every few hundred milliseconds (the
	// provider's join loop); the right member joined in that time, so two
	// more seconds of refusals is ample evidence.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		for _, m := range []*clustertest.Member{wrong, none} {
			if n := membersSeen(t, m); n != 1 {
				t.Fatalf("%s sees %d members; a member without the key must see only itself", m.Name, n)
			}
		}
		if n := membersSeen(t, seed); n != 2 {
			t.Fatalf("seed sees %d members, want 2 (itself and right-key)", n)
		}
	}
	clustertest.Eventually(t, 10*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(seed.StderrTail(), cluster.RefusedGossipMsg) {
			return fmt.Errorf("seed did not log a refusal; stderr tail:\n%s", seed.StderrTail())
		}
		return nil
	})
}

// TestClusterGossipKeyRotation rotates the key of a running 3-member
// cluster through its key files (install, use, remove) while one member
// sends requests to grains on every member; no request may fail and no
// member may drop out. Afterwards a member with only the new key joins and
// one with only the old key is refused.
func TestClusterGossipKeyRotation(t *testing.T) {
	oldKey, newKey := newGossipKey(t), newGossipKey(t)
	enc := func(keys ...[]byte) string {
		var lines []string
		for _, k := range keys {
			lines = append(lines, base64.StdEncoding.EncodeToString(k))
		}
		return "# gossip keys, the first encrypts\n" + strings.Join(lines, "\n") + "\n"
	}
	dir := t.TempDir()
	const n = 3
	// Slower than RelaxedFailureDetection: this test starts five -race
	// members on a shared machine, and a starved member falsely declared
	// dead would hide what the test is about (a key problem shows up as
	// refused gossip and failed requests, not as slowness).
	fd := cluster.FailureDetection{ProbeInterval: 2 * time.Second, ProbeTimeout: time.Second, SuspicionMult: 4}
	files := make([]string, n)
	opts := make([]clustertest.MemberOptions, n)
	for i := range files {
		files[i] = filepath.Join(dir, fmt.Sprintf("keys%d", i))
		if err := os.WriteFile(files[i], []byte(enc(oldKey)), 0o600); err != nil {
			t.Fatal(err)
		}
		opts[i] = clustertest.MemberOptions{Name: fmt.Sprintf("r%d", i), ClusterName: "rotate",
			FailureDetection: fd,
			Security:         cluster.Security{GossipKeyFile: files[i], ReloadInterval: 100 * time.Millisecond}}
	}
	ms := clustertest.StartClusterWith(t, opts...)

	// Background load through r1: 16 identities spread over all members.
	ids := make([]string, 16)
	for i := range ids {
		ids[i] = "rot-" + strconv.Itoa(i)
	}
	arg, _ := json.Marshal(loadArgs{Identities: ids, Duration: 6 * time.Second, Timeout: 10 * time.Second})
	loadDone := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := ms[1].Call(ctx, cmdLoad, string(arg))
		if err != nil {
			out = "error: " + err.Error()
		}
		loadDone <- out
	}()

	steps := []struct {
		name string
		keys [][]byte
	}{
		{"install", [][]byte{oldKey, newKey}},
		{"use", [][]byte{newKey, oldKey}},
		{"remove", [][]byte{newKey}},
	}
	for _, st := range steps {
		// One member at a time, as an operator's rollout would go.
		for i, f := range files {
			// Replace the file atomically, as an operator's tooling should
			// (the reloader also survives a half-written file: it keeps the
			// keyring and retries).
			if err := os.WriteFile(f+".tmp", []byte(enc(st.keys...)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(f+".tmp", f); err != nil {
				t.Fatal(err)
			}
			want := strings.Join(fingerprintsOf(st.keys), ",")
			clustertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				got, err := ms[i].Call(ctx, cmdKeys, "")
				if err != nil {
					return err
				}
				if got != want {
					return fmt.Errorf("%s: %s keys %s, want %s", st.name, ms[i].Name, got, want)
				}
				return nil
			})
		}
		clustertest.WaitMembers(t, 10*time.Second, n, ms...)
		t.Logf("step %s applied on every member", st.name)
	}
	out := <-loadDone
	var res loadResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("load: %s", out)
	}
	t.Logf("load during rotation: %d ok, %d failed, max latency %v", res.OK, res.Failed, res.MaxLatency)
	if res.Failed != 0 || res.OK == 0 {
		t.Fatalf("load during rotation: %d ok, %d failed: %v", res.OK, res.Failed, res.Errors)
	}
	for _, m := range ms {
		if slices.Contains(m.Events(), clustertest.EventEvicted) {
			t.Fatalf("%s was evicted during the rotation", m.Name)
		}
	}

	newOnly := clustertest.StartMember(t, clustertest.MemberOptions{Name: "new-only", ClusterName: "rotate",
		Join: []string{ms[0].GossipAddr}, FailureDetection: fd, Security: cluster.Security{GossipKeys: [][]byte{newKey}}})
	clustertest.WaitMembers(t, 30*time.Second, n+1, append(ms, newOnly)...)
	newOnly.Close(10 * time.Second)
	oldOnly := clustertest.StartMember(t, clustertest.MemberOptions{Name: "old-only", ClusterName: "rotate",
		Join: []string{ms[0].GossipAddr}, FailureDetection: fd, Security: cluster.Security{GossipKeys: [][]byte{oldKey}}})
	// Its join loop retries within a second; 3 s alone is ample.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		if got := membersSeen(t, oldOnly); got != 1 {
			t.Fatalf("a member with only the removed key sees %d members, want 1", got)
		}
	}
}

func fingerprintsOf(keys [][]byte) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = cluster.KeyFingerprint(k)
	}
	return out
}

// Attacker modes for TestHelperRemoteSender.
const (
	envSenderMode = "CLUSTER_TEST_SENDER_MODE" // plain, no-client-cert, rogue-cert, member-cert
	envSenderCA   = "CLUSTER_TEST_SENDER_CA"   // cluster CA file (to trust the server)
	envSenderCert = "CLUSTER_TEST_SENDER_CERT" // "certfile,keyfile" for rogue-cert and member-cert
	cmdSend       = "send"                     // arg: "address id by"
)

// TestHelperRemoteSender is a process with its own protoactor remote that
// sends Inc straight to a grain's PID, bypassing the cluster: what an
// attacker on the cluster network would do.
func TestHelperRemoteSender(t *testing.T) {
	if !clustertest.IsChild() {
		t.Skip("helper process for TestClusterRemoteMTLS")
	}
	var dial []grpc.DialOption
	mode := os.Getenv(envSenderMode)
	if mode != "plain" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		pem, err := os.ReadFile(os.Getenv(envSenderCA))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		cfg.RootCAs = x509.NewCertPool()
		cfg.RootCAs.AppendCertsFromPEM(pem)
		if mode != "no-client-cert" {
			certFile, keyFile, _ := strings.Cut(os.Getenv(envSenderCert), ",")
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		dial = append(dial, grpc.WithInsecure()) //nolint:staticcheck // the point is an unprotected sender
	}
	system := quietSystem()
	rc := remote.Configure("127.0.0.1", 0, remote.WithDialOptions(dial...))
	// One connection attempt: a refused sender gives up (and drops the
	// message) at once instead of retrying every 2 s.
	rc.MaxRetryCount = 1
	r := remote.NewRemote(system, rc)
	r.Start()
	clustertest.Serve(map[string]string{"addr": system.Address()}, map[string]clustertest.Handler{
		cmdSend: func(_ context.Context, arg string) (string, error) {
			f := strings.Fields(arg)
			if len(f) != 3 {
				return "", fmt.Errorf("send wants address id by, got %q", arg)
			}
			by, err := strconv.Atoi(f[2])
			if err != nil {
				return "", err
			}
			system.Root.Send(actor.NewPID(f[0], f[1]), envelope.Wrap(&Inc{By: by}))
			return "sent", nil
		},
	})
}

// TestClusterRemoteMTLS: members talk over mutual TLS; processes that send
// straight to a grain's PID without a client certificate signed by the
// cluster CA (plaintext, TLS without a certificate, a certificate from
// another CA) change nothing, and one with a member certificate does (the
// control that shows the others would have been seen).
func TestClusterRemoteMTLS(t *testing.T) {
	dir := t.TempDir()
	ca := clustertest.NewCA(t, "matchgrain test cluster CA")
	rogue := clustertest.NewCA(t, "rogue CA")
	var opts []clustertest.MemberOptions
	for i := range 2 {
		name := fmt.Sprintf("tls%d", i)
		files := ca.Issue(t, dir, name, "127.0.0.1")
		opts = append(opts, clustertest.MemberOptions{Name: name, ClusterName: "mtls",
			FailureDetection: clustertest.RelaxedFailureDetection(),
			Security:         cluster.Security{GossipKeys: [][]byte{newGossipKey(t)}, TLS: &files, ReloadInterval: 200 * time.Millisecond}})
	}
	opts[1].Security.GossipKeys = opts[0].Security.GossipKeys
	ms := clustertest.StartClusterWith(t, opts...)

	// Find an identity hosted on tls0 and reach it through tls1, so that
	// member-to-member traffic over TLS is exercised too.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	identity := ""
	for i := 0; identity == ""; i++ {
		id := "mtls-" + strconv.Itoa(i)
		owner, err := ms[1].Owner(ctx, counterKindName, id)
		if err != nil {
			t.Fatal(err)
		}
		if owner == ms[0].RemoteAddr {
			identity = id
		}
	}
	if got := count(t, ms[1], identity); got != 0 {
		t.Fatalf("fresh counter is %d", got)
	}
	out, err := ms[0].Call(ctx, cmdPID, identity)
	if err != nil {
		t.Fatal(err)
	}
	target := out

	member := ca.Issue(t, dir, "sender-member", "127.0.0.1")
	outsider := rogue.Issue(t, dir, "sender-rogue", "127.0.0.1")
	senders := []struct {
		mode, cert string
		by         int
		delivered  bool
	}{
		{"plain", "", 1, false},
		{"no-client-cert", "", 10, false},
		{"rogue-cert", outsider.CertFile + "," + outsider.KeyFile, 100, false},
		{"member-cert", member.CertFile + "," + member.KeyFile, 1000, true},
	}
	want := 0
	startSender := func(t *testing.T, name, mode, caFile, cert string) *clustertest.Child {
		return clustertest.StartChild(t, clustertest.ChildOptions{Name: "sender-" + name, TestName: "TestHelperRemoteSender",
			Env: []string{envSenderMode + "=" + mode, envSenderCA + "=" + caFile, envSenderCert + "=" + cert}})
	}
	for _, s := range senders {
		t.Run(s.mode, func(t *testing.T) {
			child := startSender(t, s.mode, s.mode, member.CAFile, s.cert)
			defer child.Close(5 * time.Second)
			if _, err := child.Call(ctx, cmdSend, fmt.Sprintf("%s %d", target, s.by)); err != nil {
				t.Fatal(err)
			}
			if s.delivered {
				want += s.by
				clustertest.Eventually(t, 15*time.Second, 100*time.Millisecond, func() error {
					if got := count(t, ms[1], identity); got != want {
						return fmt.Errorf("counter %d, want %d", got, want)
					}
					return nil
				})
				return
			}
			// Refused senders: the TLS handshake fails at once and the sender's
			// single connection attempt gives up; 3 s of an unchanged counter
			// is many times what the member-cert delivery takes.
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
				if got := count(t, ms[1], identity); got != want {
					t.Fatalf("a %s sender changed the counter to %d (want %d)", s.mode, got, want)
				}
			}
		})
	}

	// Reload: both members' files are replaced by certificates of a new CA
	// while they run. A sender with a certificate of the new CA gets in
	// once the files are reloaded; the old member certificate no longer
	// does.
	ca2 := clustertest.NewCA(t, "rotated cluster CA")
	for i := range 2 {
		ca2.Issue(t, dir, fmt.Sprintf("tls%d", i), "127.0.0.1")
	}
	rotated := ca2.Issue(t, dir, "sender-rotated", "127.0.0.1")
	t.Run("rotated-member-cert", func(t *testing.T) {
		child := startSender(t, "rotated", "member-cert", rotated.CAFile, rotated.CertFile+","+rotated.KeyFile)
		defer child.Close(5 * time.Second)
		const by = 10000
		// Until the members reload (200 ms ticks), a send fails its one
		// connection attempt and is dropped; send again until one lands.
		deadline := time.Now().Add(20 * time.Second)
		for delivered := false; !delivered; {
			if time.Now().After(deadline) {
				t.Fatalf("no delivery with a certificate of the new CA within 20 s: files not reloaded")
			}
			if _, err := child.Call(ctx, cmdSend, fmt.Sprintf("%s %d", target, by)); err != nil {
				t.Fatal(err)
			}
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
				if got := count(t, ms[1], identity); got == want+by {
					delivered = true
					break
				} else if got != want {
					t.Fatalf("counter %d, want %d or %d", got, want, want+by)
				}
			}
		}
		want += by
	})
	t.Run("old-member-cert-after-reload", func(t *testing.T) {
		child := startSender(t, "old", "member-cert", rotated.CAFile, member.CertFile+","+member.KeyFile)
		defer child.Close(5 * time.Second)
		if _, err := child.Call(ctx, cmdSend, fmt.Sprintf("%s %d", target, 100000)); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
			if got := count(t, ms[1], identity); got != want {
				t.Fatalf("a certificate of the replaced CA changed the counter to %d (want %d)", got, want)
			}
		}
	})
}

func quietSystem() *actor.ActorSystem {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
}

// TestClusterPeerWithoutTLSGetsNoGrains is attack 2 of issue 41: a process
// with the right gossip key but no cluster certificate gets into the
// memberlist view, but a member with TLS checks its remote first and keeps
// it out of the topology, so no grain is ever placed on it; a peer with a
// member certificate gets in (the control).
func TestClusterPeerWithoutTLSGetsNoGrains(t *testing.T) {
	dir := t.TempDir()
	ca := clustertest.NewCA(t, "matchgrain test cluster CA")
	key := newGossipKey(t)
	fd := clustertest.RelaxedFailureDetection()
	files := ca.Issue(t, dir, "seed", "127.0.0.1")
	seed := clustertest.StartMember(t, clustertest.MemberOptions{Name: "seed", ClusterName: "gate", GossipAddr: clustertest.FreeAddr(t),
		FailureDetection: fd, Security: cluster.Security{GossipKeys: [][]byte{key}, TLS: &files}})
	join := []string{seed.GossipAddr}
	clustertest.StartMember(t, clustertest.MemberOptions{Name: "no-tls", ClusterName: "gate", Join: join,
		FailureDetection: fd, Security: cluster.Security{GossipKeys: [][]byte{key}}})
	clustertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(seed.StderrTail(), cluster.PeerRefusedMsg) {
			return fmt.Errorf("seed did not refuse the peer without TLS; stderr tail:\n%s", seed.StderrTail())
		}
		return nil
	})
	// The seed retries the check every second; two seconds of a topology
	// of one shows the retries do not let it in.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if n := membersSeen(t, seed); n != 1 {
			t.Fatalf("seed routes to %d members, want 1: the member without TLS is in its topology", n)
		}
	}
	peerFiles := ca.Issue(t, dir, "peer", "127.0.0.1")
	peer := clustertest.StartMember(t, clustertest.MemberOptions{Name: "peer", ClusterName: "gate", Join: join,
		FailureDetection: fd, Security: cluster.Security{GossipKeys: [][]byte{key}, TLS: &peerFiles}})
	clustertest.WaitMembers(t, 30*time.Second, 2, seed, peer)
}

// TestClusterOwnCertificateMustVerify: a member whose certificate is not
// signed by the CA it was given would be refused by every peer and, alone
// in its view, take every grain; it does not start, and says why.
func TestClusterOwnCertificateMustVerify(t *testing.T) {
	dir := t.TempDir()
	files := clustertest.NewCA(t, "cluster CA").Issue(t, dir, "member", "127.0.0.1")
	files.CAFile = clustertest.NewCA(t, "another CA").Issue(t, dir, "other", "127.0.0.1").CAFile
	_, err := cluster.Start(cluster.Config{ClusterName: "own-cert", GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0",
		Security: cluster.Security{TLS: &files}, Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, cluster.ErrInvalidConfig) || !strings.Contains(err.Error(), "does not verify against the CA") {
		t.Fatalf("start with a certificate of another CA: %v", err)
	}
}
