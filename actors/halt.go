package actors

import (
	"errors"

	"github.com/matchgrain/matchgrain/persistence"
)

// HaltReason says why an activation stopped for good (core.halt), as the
// edge's close reasons say why a connection ended: it is the reason label
// of matchgrain_grain_halts_total and the halt_reason field of the
// "activation halted" log line. Every halt is safe (the next activation
// rebuilds the truth from the store); the reasons tell an operator whether
// halts come from failovers (fenced, superseded, moved_away), an
// unhealthy store (claim_failed, append_unknown) or a bug (recovery_failed,
// apply_failed, encode_failed).
type HaltReason uint8

// The halt reasons. Add new ones at the end: the values are never stored,
// but the label strings are a contract with dashboards.
const (
	// HaltNone: the activation did not halt.
	HaltNone HaltReason = iota
	// HaltActivationRefused: the member may not activate now
	// (GrainDeps.MayActivate: draining, evicted, just stalled).
	HaltActivationRefused
	// HaltNotOwner is never reported: an activation that another member
	// owns in this member's view waits without halting (Core.OwnedNow).
	//
	// Deprecated: kept so that no later reason takes its value or label.
	HaltNotOwner
	// HaltClaimFailed: the store did not answer the claim.
	HaltClaimFailed
	// HaltRecoveryFailed: the claimed snapshot and log could not be rebuilt.
	HaltRecoveryFailed
	// HaltFenced: a write was refused because a newer activation claimed
	// the match.
	HaltFenced
	// HaltAppendUnknown: an append failed without saying whether it landed,
	// so this activation's memory may be ahead of or behind the log.
	HaltAppendUnknown
	// HaltSuperseded: a seat has seen frames of a newer activation.
	HaltSuperseded
	// HaltMovedAway: this member's view moved the match to another member.
	HaltMovedAway
	// HaltApplyFailed: the engine refused a server command (a bug).
	HaltApplyFailed
	// HaltEncodeFailed: a log entry could not be encoded (a bug).
	HaltEncodeFailed
)

var haltReasonNames = [...]string{
	HaltNone:              "none",
	HaltActivationRefused: "activation_refused",
	HaltNotOwner:          "not_owner",
	HaltClaimFailed:       "claim_failed",
	HaltRecoveryFailed:    "recovery_failed",
	HaltFenced:            "fenced",
	HaltAppendUnknown:     "append_unknown",
	HaltSuperseded:        "superseded",
	HaltMovedAway:         "moved_away",
	HaltApplyFailed:       "apply_failed",
	HaltEncodeFailed:      "encode_failed",
}

// String is the reason's metric label and log value.
func (r HaltReason) String() string {
	if int(r) < len(haltReasonNames) {
		return haltReasonNames[r]
	}
	return "unknown"
}

// appendHaltReason classifies a failed append.
func appendHaltReason(err error) HaltReason {
	if errors.Is(err, persistence.ErrFenced) {
		return HaltFenced
	}
	return HaltAppendUnknown
}
