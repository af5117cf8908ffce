package clusterkeys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
)

// ErrForeignCluster is returned by CheckIdentity when the database records
// another cluster's identity: this member must not start on it, or it would
// claim the other cluster's matches from the store while its members do not
// know it (issue 41, attack 3).
var ErrForeignCluster = errors.New("clusterkeys: the database belongs to another cluster")

// identityOverlap keeps every recorded identity accepted: an identity is
// never retired by time, only by an operator (docs/security.md).
const identityOverlap = 100 * 365 * 24 * time.Hour

// CheckIdentity compares this member's identity (cluster.Security.Identity:
// one fingerprint per gossip key, bound to the cluster name) with the one
// recorded in the database. The first member records its own; a member
// that shares at least one fingerprint with the record is of this cluster
// and adds the fingerprints the record lacks (a member started with the new
// key of a rotation); any other member gets ErrForeignCluster. The
// embedded store serves one node and has nothing to check.
func CheckIdentity(ctx context.Context, store persistence.Store, ids [][]byte) error {
	ck, ok := store.(persistence.ClusterKeys)
	if _, embedded := store.(*persistence.EmbeddedStore); !ok || embedded || len(ids) == 0 {
		return nil
	}
	if err := ck.EnsureKey(ctx, PurposeIdentity, ids[0]); err != nil {
		return fmt.Errorf("record the cluster identity: %w", err)
	}
	kr, err := ck.KeyRing(ctx, PurposeIdentity, identityOverlap)
	if err != nil {
		return fmt.Errorf("read the cluster identity: %w", err)
	}
	recorded := append([]persistence.KeyVersion{kr.Current}, kr.Accept...)
	has := func(id []byte) bool {
		for _, v := range recorded {
			if bytes.Equal(v.Secret, id) {
				return true
			}
		}
		return false
	}
	var missing [][]byte
	for _, id := range ids {
		if !has(id) {
			missing = append(missing, id)
		}
	}
	if len(missing) == len(ids) {
		return fmt.Errorf("%w: none of this member's %d gossip key(s) with cluster name matches the %d identities recorded "+
			"(another cluster, or a gossip key rotated while no member held both keys; see docs/security.md)",
			ErrForeignCluster, len(ids), len(recorded))
	}
	for _, id := range missing {
		if _, err := ck.RotateKey(ctx, PurposeIdentity, id, 0, 0); err != nil {
			return fmt.Errorf("record a new gossip key's cluster identity: %w", err)
		}
	}
	return nil
}
