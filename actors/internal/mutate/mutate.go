// Package mutate plants known bugs in the match grain for the simulator's
// mutation test (actors/sim), which shows that the simulator catches each.
// Only packages under actors/ can import it; Planted is None everywhere
// else, and checking it costs one load per site.
package mutate

// Bug is one planted bug.
type Bug uint8

// The bugs the mutation test plants.
const (
	None Bug = iota
	// AckBeforeAppend: the grain sends an intent's result and events before
	// its durable append.
	AckBeforeAppend
	// ApplyDuplicate: the grain ignores its idempotency journal, so a
	// re-sent intent is executed again.
	ApplyDuplicate
	// SkipFence: the simulated store accepts writes of superseded epochs.
	SkipFence
	// DropReactivationTimer: an activation does not fire or arm its
	// deadlines; only a later request arms its timer.
	DropReactivationTimer
	// StaleAttachTakesSeat: a first attach with an older ticket than the
	// live connection's (held up, then delivered) takes the seat over.
	StaleAttachTakesSeat
)

// Planted is the bug planted now. The mutation test sets it before a run
// and resets it after; nothing may set it while a grain runs.
var Planted Bug
