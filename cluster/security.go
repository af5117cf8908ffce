package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"google.golang.org/grpc/credentials"
)

// ErrInsecure is wrapped by the error Start returns for a member that would
// listen or advertise on a non-loopback address without a gossip key and
// TLS material, and without Security.Insecure.
// ErrInsecure wraps ErrInvalidConfig too.
var ErrInsecure = errors.New("unprotected member on a non-loopback address")

// DefaultSecretsReload is how often key and certificate files are re-read.
const DefaultSecretsReload = 5 * time.Second

// Security is how members prove to each other that they belong to the
// cluster. Gossip (memberlist) is encrypted and authenticated with
// AES-GCM under a shared keyring; the actor remote (gRPC) runs over mutual
// TLS with certificates signed by the cluster CA. Without both, anyone who
// can reach a member's ports can join the cluster or send any message to any
// grain, so Start refuses a member with a non-loopback address unless both
// are set or Insecure says otherwise (see docs/security.md).
type Security struct {
	// GossipKeys are memberlist keys (16, 24 or 32 bytes: AES-128, -192 or
	// -256). The first encrypts; every key decrypts, which is what a
	// rotation needs (install the new key everywhere, make it first
	// everywhere, remove the old one). Static: for rotation without restart
	// use GossipKeyFile. At most one of the two.
	GossipKeys [][]byte
	// GossipKeyFile names a file of base64 keys (ParseGossipKeys: one per
	// line or comma-separated, '#' comments, the first encrypts). It is
	// re-read every ReloadInterval and the keyring is changed in place: new
	// keys are installed, the first becomes primary, keys no longer listed
	// are removed. A file that does not parse is logged and ignored (the
	// keyring stays as it was).
	GossipKeyFile string
	// TLS enables mutual TLS on the actor remote. Nil: plaintext gRPC.
	TLS *TLSFiles
	// Insecure lets a member with a non-loopback address start without a
	// gossip key or TLS. It is logged at ERROR on every start.
	Insecure bool
	// ReloadInterval is how often GossipKeyFile and the TLS files are checked
	// for changes. Default DefaultSecretsReload (5 s).
	ReloadInterval time.Duration
}

// TLSFiles names PEM files for the remote's mutual TLS. The same certificate
// serves as server certificate (peers check it against CAFile and against
// the host they dial: the certificate needs that IP or DNS name as a subject
// alternative name) and as client certificate (the server requires one
// signed by CAFile). The files are re-read every Security.ReloadInterval; a
// change applies to the next handshake, established connections keep theirs.
type TLSFiles struct {
	CertFile, KeyFile, CAFile string
}

func (s Security) gossipKeyed() bool { return len(s.GossipKeys) > 0 || s.GossipKeyFile != "" }

func (s Security) validate() error {
	if len(s.GossipKeys) > 0 && s.GossipKeyFile != "" {
		return fmt.Errorf("%w: set Security.GossipKeys or Security.GossipKeyFile, not both", ErrInvalidConfig)
	}
	for i, k := range s.GossipKeys {
		if err := checkGossipKey(k); err != nil {
			return fmt.Errorf("%w: Security.GossipKeys[%d]: %v", ErrInvalidConfig, i, err)
		}
	}
	if s.TLS != nil && (s.TLS.CertFile == "" || s.TLS.KeyFile == "" || s.TLS.CAFile == "") {
		return fmt.Errorf("%w: Security.TLS needs CertFile, KeyFile and CAFile", ErrInvalidConfig)
	}
	if s.ReloadInterval < 0 {
		return fmt.Errorf("%w: Security.ReloadInterval must be positive, got %v", ErrInvalidConfig, s.ReloadInterval)
	}
	return nil
}

func checkGossipKey(k []byte) error {
	switch len(k) {
	case 16, 24, 32:
		return nil
	}
	return fmt.Errorf("key is %d bytes, want 16, 24 or 32", len(k))
}

// ParseGossipKeys parses base64 (standard encoding) gossip keys separated by
// newlines or commas; blank lines and lines starting with '#' are skipped.
// The first key is the one that encrypts. Errors never contain key material.
func ParseGossipKeys(text string) ([][]byte, error) {
	var keys [][]byte
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, f := range strings.Split(line, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			k, err := base64.StdEncoding.DecodeString(f)
			if err != nil {
				return nil, fmt.Errorf("gossip key %d is not base64", len(keys)+1)
			}
			if err := checkGossipKey(k); err != nil {
				return nil, fmt.Errorf("gossip key %d: %w", len(keys)+1, err)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no gossip key")
	}
	return keys, nil
}

// Identity names the cluster this Security belongs to: one fingerprint per
// gossip key, SHA-256 of the cluster name and the key (one of the name alone
// without keys). Members record it in their shared database, so that a
// member of another cluster, which has other keys, refuses to start on it
// (clusterkeys.CheckIdentity). Fingerprints reveal nothing of the keys.
func (s Security) Identity(clusterName string) ([][]byte, error) {
	keys, err := s.loadGossipKeys()
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		keys = [][]byte{nil}
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		h := sha256.New()
		h.Write([]byte("matchgrain cluster identity v1\x00"))
		h.Write([]byte(clusterName))
		h.Write([]byte{0})
		h.Write(k)
		out[i] = h.Sum(nil)
	}
	return out, nil
}

// KeyFingerprint names a key in logs without revealing it: the first 8 hex
// digits of its SHA-256.
func KeyFingerprint(k []byte) string {
	sum := sha256.Sum256(k)
	return hex.EncodeToString(sum[:4])
}

func fingerprints(keys [][]byte) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = KeyFingerprint(k)
	}
	return out
}

// isLoopbackHost reports whether host (an IP literal or a name) is only
// reachable from this machine.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// exposedAddrs returns the addresses of c that other machines could reach.
func (c Config) exposedAddrs() []string {
	var out []string
	for _, a := range []string{c.GossipAddr, c.AdvertiseGossipAddr, c.RemoteAddr, c.AdvertiseRemoteAddr} {
		if a == "" {
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil || !isLoopbackHost(host) {
			out = append(out, a)
		}
	}
	return out
}

// checkExposure enforces "safe by default": see Security.
func (c Config) checkExposure() error {
	exposed := c.exposedAddrs()
	if len(exposed) == 0 || c.Security.Insecure {
		return nil
	}
	var missing []string
	if !c.Security.gossipKeyed() {
		missing = append(missing, "gossip key")
	}
	if c.Security.TLS == nil {
		missing = append(missing, "remote TLS files")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w: %s not loopback and no %s: set them, or set Insecure (--insecure-cluster) on a network only members can reach",
		ErrInvalidConfig, ErrInsecure, strings.Join(exposed, ", "), strings.Join(missing, " and no "))
}

// gossipKeys returns the configured keys, reading GossipKeyFile if set.
func (s Security) loadGossipKeys() ([][]byte, error) {
	if s.GossipKeyFile == "" {
		return s.GossipKeys, nil
	}
	b, err := os.ReadFile(s.GossipKeyFile)
	if err != nil {
		return nil, fmt.Errorf("read gossip key file: %w", err)
	}
	keys, err := ParseGossipKeys(string(b))
	if err != nil {
		return nil, fmt.Errorf("gossip key file %s: %w", s.GossipKeyFile, err)
	}
	return keys, nil
}

// applyKeys makes ring hold exactly keys, keys[0] primary, without a moment
// in which a key of either list is missing: add, switch, then remove.
func applyKeys(ring *memberlist.Keyring, keys [][]byte) error {
	for _, k := range keys {
		if err := ring.AddKey(k); err != nil {
			return fmt.Errorf("install gossip key %s: %w", KeyFingerprint(k), err)
		}
	}
	if err := ring.UseKey(keys[0]); err != nil {
		return fmt.Errorf("use gossip key %s: %w", KeyFingerprint(keys[0]), err)
	}
	for _, old := range slices.Clone(ring.GetKeys()) { // RemoveKey shifts the ring's slice in place
		if !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, old) }) {
			if err := ring.RemoveKey(old); err != nil {
				return fmt.Errorf("remove gossip key %s: %w", KeyFingerprint(old), err)
			}
		}
	}
	return nil
}

// fileWatcher re-reads a set of files when their contents change.
type fileWatcher struct {
	files []string
	sum   [32]byte
}

// changed reports whether the files' contents differ from the last call
// that returned true (the first call always does).
func (w *fileWatcher) changed() (bool, error) {
	h := sha256.New()
	for _, f := range w.files {
		b, err := os.ReadFile(f)
		if err != nil {
			return false, fmt.Errorf("read %s: %w", f, err)
		}
		sum := sha256.Sum256(b)
		h.Write(sum[:])
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	if sum == w.sum {
		return false, nil
	}
	w.sum = sum
	return true, nil
}

// tlsSource holds the current certificate and CA pool, reloaded from files.
type tlsSource struct {
	files TLSFiles
	mu    sync.RWMutex
	cert  *tls.Certificate
	pool  *x509.CertPool
}

func (s *tlsSource) load() error {
	cert, err := tls.LoadX509KeyPair(s.files.CertFile, s.files.KeyFile)
	if err != nil {
		return fmt.Errorf("load remote TLS key pair %s, %s: %w", s.files.CertFile, s.files.KeyFile, err)
	}
	ca, err := os.ReadFile(s.files.CAFile)
	if err != nil {
		return fmt.Errorf("read remote TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("remote TLS CA %s holds no PEM certificate", s.files.CAFile)
	}
	s.mu.Lock()
	s.cert, s.pool = &cert, pool
	s.mu.Unlock()
	return nil
}

// verifySelf checks that this member's own certificate is signed by its CA
// and valid now: a member whose peers would all refuse it must not start
// and take every grain of a view that holds only itself.
func (s *tlsSource) verifySelf() error {
	cert, pool := s.current()
	leaf := cert.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return fmt.Errorf("parse remote TLS certificate %s: %w", s.files.CertFile, err)
		}
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("remote TLS certificate %s does not verify against the CA %s, so every peer would refuse this member: %w",
			s.files.CertFile, s.files.CAFile, err)
	}
	return nil
}

func (s *tlsSource) current() (*tls.Certificate, *x509.CertPool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cert, s.pool
}

// remoteHandshakeTimeout bounds a remote connection's TLS handshake, so
// that connections that never finish it cannot pile up.
const remoteHandshakeTimeout = 10 * time.Second

// mtlsCreds are gRPC transport credentials that build a fresh tls.Config
// from the tlsSource on every handshake, so reloaded files apply at once.
// TLS 1.3 only: every member runs this code.
type mtlsCreds struct{ src *tlsSource }

func (c mtlsCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	cert, pool := c.src.current()
	host, _, err := net.SplitHostPort(authority)
	if err != nil {
		host = authority
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{*cert}, RootCAs: pool, ServerName: host}
	nc, info, err := credentials.NewTLS(cfg).ClientHandshake(ctx, authority, conn)
	if err != nil {
		return nil, nil, fmt.Errorf("remote TLS handshake with %s: %w", authority, err)
	}
	return nc, info, nil
}

func (c mtlsCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	cert, pool := c.src.current()
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{*cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	nc, info, err := credentials.NewTLS(cfg).ServerHandshake(conn)
	if err != nil {
		return nil, nil, fmt.Errorf("remote TLS handshake from %s: %w", conn.RemoteAddr(), err)
	}
	return nc, info, nil
}

func (c mtlsCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls", SecurityVersion: "1.3"}
}

func (c mtlsCreds) Clone() credentials.TransportCredentials { return c }

// OverrideServerName is deprecated in gRPC and unused: the server name is
// the dialled host.
func (c mtlsCreds) OverrideServerName(string) error { return nil }

// secretsReloader re-reads the gossip key file and TLS files.
type secretsReloader struct {
	log      *slog.Logger
	interval time.Duration
	keyFile  string
	ring     *memberlist.Keyring
	keys     *fileWatcher
	tls      *tlsSource
	certs    *fileWatcher
}

func (r *secretsReloader) run(quit <-chan struct{}) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
		}
		r.reload()
	}
}

func (r *secretsReloader) reload() {
	if r.keys != nil {
		if changed, err := r.keys.changed(); err != nil {
			r.log.Warn("cluster: gossip key file unreadable; keyring unchanged", slog.Any("err", err))
		} else if changed {
			r.reloadKeys()
		}
	}
	if r.certs != nil {
		if changed, err := r.certs.changed(); err != nil {
			r.log.Warn("cluster: remote TLS files unreadable; keeping the current ones", slog.Any("err", err))
		} else if changed {
			if err := r.tls.load(); err != nil {
				r.certs.sum = [32]byte{} // retry on the next tick: the files may be mid-write
				r.log.Warn("cluster: remote TLS files do not load; keeping the current ones", slog.Any("err", err))
			} else {
				r.log.Info("cluster: remote TLS certificate and CA reloaded")
			}
		}
	}
}

func (r *secretsReloader) reloadKeys() {
	b, err := os.ReadFile(r.keyFile)
	if err == nil {
		var keys [][]byte
		if keys, err = ParseGossipKeys(string(b)); err == nil {
			if err = applyKeys(r.ring, keys); err == nil {
				r.log.Info("cluster: gossip keyring reloaded", slog.Any("keys", fingerprints(keys)))
				return
			}
		}
	}
	r.keys.sum = [32]byte{} // retry on the next tick: the file may be mid-write
	r.log.Warn("cluster: gossip key file rejected; keyring unchanged", slog.Any("err", err))
}
