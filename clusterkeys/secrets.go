package clusterkeys

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
)

// Purposes of the secrets members share through the database
// (persistence.ClusterKeys).
const (
	PurposeTicketKey  = "ticket-key"
	PurposeAdminToken = "admin-token"
	PurposeIdentity   = "cluster-identity"
)

// AdminTokenFile names the file in the data directory that holds the
// generated admin token of a node without a token and without a database.
const AdminTokenFile = "admin-token"

// TicketKeyLen is the length of a generated ticket key (256 bits).
const TicketKeyLen = 32

// Options say which secrets were given and how shared ones rotate.
type Options struct {
	// AdminToken and TicketKey, if set, are used as given (never shared
	// or rotated through the database).
	AdminToken string
	TicketKey  []byte
	// DataDir is where an embedded node keeps its generated admin token.
	DataDir string
	// TicketTTL is how long an issued ticket lives; Refresh how often a
	// member re-reads the shared ticket keys; Rotation how old the shared
	// ticket key may grow before a member replaces it (0: never).
	TicketTTL, Refresh, Rotation time.Duration
	// Logger receives where the secrets come from, never the secrets.
	Logger *slog.Logger
}

// Secrets are the admin token and ticket keys of a node.
type Secrets struct {
	AdminToken string
	// AdminTokenAt says where an operator finds the admin token (never
	// the token itself).
	AdminTokenAt string
	// TicketKey signs tickets; TicketAccept are more keys to accept (a
	// rotation in progress).
	TicketKey    []byte
	TicketAccept [][]byte

	opts   Options
	shared persistence.ClusterKeys // set when the ticket key lives in the database
	gen    int64
}

// Load returns the node's admin token and ticket keys. An explicit option
// always wins. Otherwise the store keeps them (persistence.ClusterKeys): with
// PostgreSQL they are shared through the database (the first member to start
// creates them, the others read them), so members started without them
// still accept each other's tickets; the embedded store keeps the ticket
// keys the same way, so a restarted node's tickets and seat links still
// work. The embedded node's admin token lives in DataDir/AdminTokenFile,
// where its operator can read it (a bbolt file is no place to look for one).
func Load(ctx context.Context, o Options, store persistence.Store) (*Secrets, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Secrets{opts: o}
	ck, shared := store.(persistence.ClusterKeys)
	_, embedded := store.(*persistence.EmbeddedStore)
	switch {
	case o.AdminToken != "":
		s.AdminToken, s.AdminTokenAt = o.AdminToken, "--admin-token (MATCHD_ADMIN_TOKEN)"
	case shared && !embedded:
		tok, err := sharedSecret(ctx, ck, PurposeAdminToken, func() ([]byte, error) {
			b, err := randomBytes(16)
			return []byte(hex.EncodeToString(b)), err
		})
		if err != nil {
			return nil, err
		}
		s.AdminToken = string(tok)
		s.AdminTokenAt = "the database (table cluster_keys, purpose 'admin-token'; docs/operations.md)"
	default:
		file := filepath.Join(o.DataDir, AdminTokenFile)
		tok, err := fileSecret(file, func() (string, error) {
			b, err := randomBytes(16)
			return hex.EncodeToString(b), err
		})
		if err != nil {
			return nil, err
		}
		s.AdminToken, s.AdminTokenAt = tok, file
	}
	o.Logger.Info("admin token", "kept_in", s.AdminTokenAt)
	switch {
	case len(o.TicketKey) > 0:
		s.TicketKey = o.TicketKey
	case shared:
		if _, err := sharedSecret(ctx, ck, PurposeTicketKey, func() ([]byte, error) { return randomBytes(TicketKeyLen) }); err != nil {
			return nil, err
		}
		kr, err := ck.KeyRing(ctx, PurposeTicketKey, s.overlap())
		if err != nil {
			return nil, fmt.Errorf("read the shared ticket key: %w", err)
		}
		s.TicketKey, s.TicketAccept, s.gen = kr.Current.Secret, secretsOf(kr.Accept), kr.Current.Generation
		s.shared = ck
		o.Logger.Info("ticket key shared through the database", "generation", s.gen, "accepted_generations", len(kr.Accept))
	default:
		k, err := randomBytes(TicketKeyLen)
		if err != nil {
			return nil, fmt.Errorf("generate ticket key: %w", err)
		}
		s.TicketKey = k
		o.Logger.Info("no ticket key and a store that keeps none: generated a key for this run; other edges will not accept this node's tickets")
	}
	return s, nil
}

// Shared reports whether the ticket keys live in the database, so that
// RefreshTicketKeys has work to do.
func (s *Secrets) Shared() bool { return s.shared != nil }

// overlap is how long a retired ticket key stays accepted: a member may sign
// with it until its next refresh after the successor became active, and such
// a ticket lives for the ticket TTL; one more refresh is the margin.
func (s *Secrets) overlap() time.Duration {
	return s.opts.TicketTTL + 2*s.opts.Refresh
}

// RefreshTicketKeys keeps set in step with the database's ticket keys until
// ctx ends, and rotates the key when it is older than Options.Rotation (any
// member may; the database lets one win). A new key is published 2 refreshes
// before it signs anything, so every member accepts it by the time any
// member uses it. set is edge.Ticketer.SetKeys. A no-op unless Shared.
func (s *Secrets) RefreshTicketKeys(ctx context.Context, set func(key []byte, accept ...[]byte) error) {
	if s.shared == nil {
		return
	}
	o, log := s.opts, s.opts.Logger
	t := time.NewTicker(o.Refresh)
	defer t.Stop()
	gen, accepted := s.gen, len(s.TicketAccept)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, o.Refresh)
		if o.Rotation > 0 {
			candidate, err := randomBytes(TicketKeyLen)
			if err == nil {
				var g int64
				g, err = s.shared.RotateKey(rctx, PurposeTicketKey, candidate, 2*o.Refresh, o.Rotation)
				if g > 0 {
					log.Info("published a new ticket key", "generation", g, "active_in", 2*o.Refresh)
				}
			}
			if err != nil && ctx.Err() == nil {
				log.Warn("rotate the ticket key", "err", err)
			}
		}
		kr, err := s.shared.KeyRing(rctx, PurposeTicketKey, s.overlap())
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				// The keys in use stay valid; the next refresh tries again.
				log.Warn("refresh the shared ticket key", "err", err)
			}
			continue
		}
		if err := set(kr.Current.Secret, secretsOf(kr.Accept)...); err != nil {
			log.Error("shared ticket key unusable", "generation", kr.Current.Generation, "err", err)
			continue
		}
		if kr.Current.Generation != gen || len(kr.Accept) != accepted {
			log.Info("ticket keys changed", "generation", kr.Current.Generation, "accepted_generations", len(kr.Accept))
			gen, accepted = kr.Current.Generation, len(kr.Accept)
		}
	}
}

// fileSecret returns the secret kept in file, creating the file (mode 0600)
// with gen's secret if it does not exist, so that a restarted node keeps it.
func fileSecret(file string, gen func() (string, error)) (string, error) {
	b, err := os.ReadFile(file)
	switch {
	case err == nil && strings.TrimSpace(string(b)) != "":
		return strings.TrimSpace(string(b)), nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	secret, err := gen()
	if err != nil {
		return "", fmt.Errorf("generate the secret of %s: %w", file, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(file), err)
	}
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", file, err)
	}
	return secret, nil
}

// sharedSecret creates purpose's secret if no member did yet and returns it.
func sharedSecret(ctx context.Context, ck persistence.ClusterKeys, purpose string, gen func() ([]byte, error)) ([]byte, error) {
	candidate, err := gen()
	if err != nil {
		return nil, fmt.Errorf("generate %s: %w", purpose, err)
	}
	if err := ck.EnsureKey(ctx, purpose, candidate); err != nil {
		return nil, fmt.Errorf("share %s: %w", purpose, err)
	}
	kr, err := ck.KeyRing(ctx, purpose, 0)
	if err != nil {
		return nil, fmt.Errorf("read shared %s: %w", purpose, err)
	}
	return kr.Current.Secret, nil
}

func secretsOf(vs []persistence.KeyVersion) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = v.Secret
	}
	return out
}

func randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("read random bytes: %w", err)
	}
	return b, nil
}
