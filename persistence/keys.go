package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoKey is returned by KeyRing when no generation of a purpose is active
// yet (EnsureKey was never called for it).
var ErrNoKey = errors.New("persistence: no active cluster key")

// ClusterKeys keeps the secrets every member of a cluster must agree on (the
// ticket-signing key, the admin token) in the shared database, so that
// members started without them still agree. The embedded store implements it
// too, for a node that must agree with itself after a restart: the tickets
// and seat links it issued stay valid.
//
// Secrets are returned to the caller and never logged.
type ClusterKeys interface {
	// EnsureKey makes candidate generation 1 of purpose, active at once,
	// unless some generation exists already; either way the purpose has a
	// key afterwards. Of any number of concurrent calls exactly one inserts.
	EnsureKey(ctx context.Context, purpose string, candidate []byte) error
	// RotateKey publishes candidate as the next generation of purpose, to
	// become active activateAfter from now (database time), but only if the
	// newest generation was created at least olderThan ago and no published
	// generation is still waiting to become active. It returns the new
	// generation, or 0 when no rotation was due or a concurrent call rotated
	// first.
	RotateKey(ctx context.Context, purpose string, candidate []byte, activateAfter, olderThan time.Duration) (int64, error)
	// KeyRing returns the keys of purpose as the database sees them now:
	// the one to use and every one still to accept (see KeyRing). overlap is
	// how long a generation stays accepted after its successor became active.
	KeyRing(ctx context.Context, purpose string, overlap time.Duration) (KeyRing, error)
}

// KeyVersion is one generation of a shared secret.
type KeyVersion struct {
	Generation int64
	Secret     []byte
}

// KeyRing is what a member needs to use a rotating secret.
type KeyRing struct {
	// Current is the newest active generation: sign with it.
	Current KeyVersion
	// Accept are the other generations to accept: published ones that are
	// not active yet (a member that refreshed sooner may already sign with
	// them once they are) and retired ones within the overlap window (tokens
	// they signed may still be in flight). Newest first.
	Accept []KeyVersion
}

// EnsureKey implements ClusterKeys.
func (s *PostgresStore) EnsureKey(ctx context.Context, purpose string, candidate []byte) error {
	if err := s.check("ensure cluster key"); err != nil {
		return err
	}
	if purpose == "" || len(candidate) == 0 {
		return fmt.Errorf("ensure cluster key %q: purpose and secret must not be empty", purpose)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO cluster_keys (purpose, generation, secret)
		SELECT $1, 1, $2 WHERE NOT EXISTS (SELECT 1 FROM cluster_keys WHERE purpose = $1)
		ON CONFLICT (purpose, generation) DO NOTHING`, purpose, candidate)
	if err != nil {
		return fmt.Errorf("ensure cluster key %q: %w", purpose, err)
	}
	return nil
}

// RotateKey implements ClusterKeys.
func (s *PostgresStore) RotateKey(ctx context.Context, purpose string, candidate []byte, activateAfter, olderThan time.Duration) (int64, error) {
	if err := s.check("rotate cluster key"); err != nil {
		return 0, err
	}
	if purpose == "" || len(candidate) == 0 || activateAfter < 0 || olderThan < 0 {
		return 0, fmt.Errorf("rotate cluster key %q: empty purpose or secret, or negative duration", purpose)
	}
	var gen int64
	err := s.pool.QueryRow(ctx, `INSERT INTO cluster_keys (purpose, generation, secret, active_from)
		SELECT $1, newest.generation + 1, $2, now() + $3::bigint * interval '1 microsecond'
		FROM (SELECT generation, created_at FROM cluster_keys WHERE purpose = $1
			ORDER BY generation DESC LIMIT 1) AS newest
		WHERE newest.created_at <= now() - $4::bigint * interval '1 microsecond'
			AND NOT EXISTS (SELECT 1 FROM cluster_keys WHERE purpose = $1 AND active_from > now())
		ON CONFLICT (purpose, generation) DO NOTHING
		RETURNING generation`, purpose, candidate, activateAfter.Microseconds(), olderThan.Microseconds()).Scan(&gen)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("rotate cluster key %q: %w", purpose, err)
	}
	return gen, nil
}

// KeyRing implements ClusterKeys. Times are compared in the database, so the
// members' clocks need not agree.
func (s *PostgresStore) KeyRing(ctx context.Context, purpose string, overlap time.Duration) (KeyRing, error) {
	if err := s.check("read cluster keys"); err != nil {
		return KeyRing{}, err
	}
	rows, err := s.pool.Query(ctx, `SELECT generation, secret, active_from <= now(),
			coalesce(lead(active_from) OVER (ORDER BY generation) > now() - $2::bigint * interval '1 microsecond', true)
		FROM cluster_keys WHERE purpose = $1 ORDER BY generation DESC`, purpose, overlap.Microseconds())
	if err != nil {
		return KeyRing{}, fmt.Errorf("read cluster keys %q: %w", purpose, err)
	}
	type row struct {
		v              KeyVersion
		active, recent bool
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.v.Generation, &x.v.Secret, &x.active, &x.recent)
		return x, err
	})
	if err != nil {
		return KeyRing{}, fmt.Errorf("read cluster keys %q: %w", purpose, err)
	}
	var kr KeyRing
	found := false
	for _, x := range all {
		switch {
		case !x.active:
			kr.Accept = append(kr.Accept, x.v)
		case !found:
			kr.Current, found = x.v, true
		case x.recent:
			kr.Accept = append(kr.Accept, x.v)
		}
	}
	if !found {
		return KeyRing{}, fmt.Errorf("read cluster keys %q: %w", purpose, ErrNoKey)
	}
	return kr, nil
}

var _ ClusterKeys = (*PostgresStore)(nil)
