package persistence

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// SynchronousStandbys reports how many standbys must confirm each commit
// before the primary the store is connected to answers it, as configured
// there now: 0 when commits are acknowledged by the primary alone
// (synchronous_standby_names empty, or synchronous_commit off or local).
// An HA engine that degrades to one node when its standby is gone
// (pg_auto_failover's wait_primary) shows here as 0, so a metric of it is
// the alert that acknowledged intents live on one disk only. Both settings
// are readable by any role, unlike pg_stat_replication's sync_state.
func (s *PostgresStore) SynchronousStandbys(ctx context.Context) (int, error) {
	if err := s.check("read replication settings"); err != nil {
		return 0, err
	}
	var names, commit string
	err := s.pool.QueryRow(ctx, "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')").
		Scan(&names, &commit)
	if err != nil {
		return 0, fmt.Errorf("read replication settings: %w", err)
	}
	if commit == "off" || commit == "local" {
		return 0, nil
	}
	return syncStandbyCount(names), nil
}

// syncNumRE matches the count of "FIRST n (...)", "ANY n (...)" and the
// older "n (...)" forms of synchronous_standby_names.
var syncNumRE = regexp.MustCompile(`(?i)^\s*(?:first|any)?\s*(\d+)\s*\(`)

// syncStandbyCount reads the number of synchronous standbys a
// synchronous_standby_names value asks for: the n of its FIRST/ANY forms,
// else 1 for a plain list (its first live name is synchronous) and 0 for
// an empty value.
func syncStandbyCount(names string) int {
	if strings.TrimSpace(names) == "" {
		return 0
	}
	if m := syncNumRE.FindStringSubmatch(names); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n
		}
	}
	return 1
}
