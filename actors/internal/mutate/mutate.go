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
	// FinishedAnswersSnapshot: a finished match answers every attach with
	// a snapshot, so a seat whose connection moved just before the end
	// never gets GameFinished.
	FinishedAnswersSnapshot
	// StaleAttachKeepsSeat: a re-attach never takes the seat back, so a
	// stale attach of an older connection that reached a new activation
	// first keeps the seat and refuses the player's newest connection.
	// Too rare for TestMutations's run: regression seed 1127362 catches it.
	StaleAttachKeepsSeat
	// TimeoutCountsAsAppended: an append whose answer did not come before
	// the store timeout is taken as landed, though it may land later
	// (fenced, or after a gap) or never. Only store latency shows it.
	TimeoutCountsAsAppended
	// AbsenceNotScheduled: the grain's timer does not aim at absence
	// deadlines, so an absent seat loses at the next tick that comes for
	// another reason, up to a keep-alive interval late. Only the "never
	// late" absence check shows it.
	AbsenceNotScheduled
)

// Planted is the bug planted now. The mutation test sets it before a run
// and resets it after; nothing may set it while a grain runs.
var Planted Bug
