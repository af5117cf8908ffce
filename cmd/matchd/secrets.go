package main

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

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/persistence"
)

// Purposes of the secrets members share through the database.
const (
	purposeTicketKey  = "ticket-key"
	purposeAdminToken = "admin-token"
)

// secrets is what every edge of a cluster must agree on, and where it came
// from.
type secrets struct {
	adminToken string
	// adminTokenAt says where an operator finds the admin token (never the
	// token itself: it is not printed).
	adminTokenAt string
	ticketKey    []byte
	// ticketAccept are more keys to accept (a rotation in progress).
	ticketAccept [][]byte
	// shared is set when the ticket key lives in the database and rotates:
	// the node then refreshes it (refreshTicketKeys).
	shared persistence.ClusterKeys
	gen    int64
}

// loadSecrets returns the admin token and ticket keys. An explicit flag
// always wins. Otherwise, with PostgreSQL the secrets are shared through the
// database (the first member to start creates them, the others read them),
// so members started without them still accept each other's tickets; the
// embedded single node generates them for this run.
func loadSecrets(ctx context.Context, o options, store persistence.Store, log *slog.Logger) (secrets, error) {
	var s secrets
	ck, shared := store.(persistence.ClusterKeys)
	switch {
	case o.adminToken != "":
		s.adminToken, s.adminTokenAt = o.adminToken, "--admin-token (MATCHD_ADMIN_TOKEN)"
	case shared:
		s.adminTokenAt = "the database (table cluster_keys, purpose 'admin-token')"
		tok, err := sharedSecret(ctx, ck, purposeAdminToken, func() ([]byte, error) {
			b, err := randomBytes(16)
			return []byte(hex.EncodeToString(b)), err
		})
		if err != nil {
			return s, err
		}
		s.adminToken = string(tok)
		// Not printed: a cluster member's output ends up in container logs,
		// and whoever may read the token can read it where it is kept.
		fmt.Fprintln(os.Stderr, "matchd: no --admin-token given; the cluster's admin token is kept in the database "+
			"(table cluster_keys, purpose 'admin-token'; see docs/operations.md)")
	default:
		// Never printed (output ends up in logs, and a printed command line
		// in the process list): kept in a file only its owner reads.
		file := filepath.Join(o.dataDir, adminTokenFile)
		tok, err := fileSecret(file, func() (string, error) {
			b, err := randomBytes(16)
			return hex.EncodeToString(b), err
		})
		if err != nil {
			return s, err
		}
		s.adminToken, s.adminTokenAt = tok, file
		fmt.Fprintf(os.Stderr, "matchd: no --admin-token given; this node's admin token is in %s "+
			"(matchctl --token-file %s)\n", file, file)
	}
	switch {
	case o.ticketKey != "":
		k, err := hex.DecodeString(o.ticketKey)
		if err != nil {
			return s, fmt.Errorf("ticket-key must be hex: %w", err)
		}
		s.ticketKey = k
	case shared:
		if _, err := sharedSecret(ctx, ck, purposeTicketKey, func() ([]byte, error) { return randomBytes(32) }); err != nil {
			return s, err
		}
		kr, err := ck.KeyRing(ctx, purposeTicketKey, ticketKeyOverlap(o))
		if err != nil {
			return s, fmt.Errorf("read the shared ticket key: %w", err)
		}
		s.ticketKey, s.ticketAccept, s.gen = kr.Current.Secret, secretsOf(kr.Accept), kr.Current.Generation
		s.shared = ck
		log.Info("ticket key shared through the database", "generation", s.gen, "accepted_generations", len(kr.Accept))
	default:
		k, err := randomBytes(32)
		if err != nil {
			return s, fmt.Errorf("generate ticket key: %w", err)
		}
		s.ticketKey = k
		log.Info("no --ticket-key and no --database-url: generated a key for this run; other edges will not accept this node's tickets")
	}
	return s, nil
}

// adminTokenFile names the file in --data-dir holding the generated admin
// token of a node without --admin-token and without a database.
const adminTokenFile = "admin-token"

// fileSecret returns the secret kept in file, creating the file (mode 0600)
// with gen's secret if it does not exist, so that a restarted node keeps it.
func fileSecret(file string, gen func() (string, error)) (string, error) {
	if b, err := os.ReadFile(file); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
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

// ticketKeyOverlap is how long a retired ticket key stays accepted: a member
// may sign with it until its next refresh after the successor became active,
// and such a ticket lives for ticket-ttl; one more refresh is the margin.
func ticketKeyOverlap(o options) time.Duration {
	return o.ticketTTL + 2*o.secretsRefresh
}

// refreshTicketKeys keeps the edge's ticket keys in step with the database
// until ctx ends, and rotates the key when it is older than
// --ticket-key-rotation (any member may; the database lets one win). A new
// key is published 2 refreshes before it signs anything, so every member
// accepts it by the time any member uses it.
func refreshTicketKeys(ctx context.Context, o options, s secrets, tickets *edge.Ticketer, log *slog.Logger) {
	t := time.NewTicker(o.secretsRefresh)
	defer t.Stop()
	gen, accepted := s.gen, len(s.ticketAccept)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, o.secretsRefresh)
		if o.ticketKeyRotation > 0 {
			candidate, err := randomBytes(32)
			if err == nil {
				var g int64
				g, err = s.shared.RotateKey(rctx, purposeTicketKey, candidate, 2*o.secretsRefresh, o.ticketKeyRotation)
				if g > 0 {
					log.Info("published a new ticket key", "generation", g, "active_in", 2*o.secretsRefresh)
				}
			}
			if err != nil && ctx.Err() == nil {
				log.Warn("rotate the ticket key", "err", err)
			}
		}
		kr, err := s.shared.KeyRing(rctx, purposeTicketKey, ticketKeyOverlap(o))
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				// The keys in use stay valid; the next refresh tries again.
				log.Warn("refresh the shared ticket key", "err", err)
			}
			continue
		}
		if err := tickets.SetKeys(kr.Current.Secret, secretsOf(kr.Accept)...); err != nil {
			log.Error("shared ticket key unusable", "generation", kr.Current.Generation, "err", err)
			continue
		}
		if kr.Current.Generation != gen || len(kr.Accept) != accepted {
			log.Info("ticket keys changed", "generation", kr.Current.Generation, "accepted_generations", len(kr.Accept))
			gen, accepted = kr.Current.Generation, len(kr.Accept)
		}
	}
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
