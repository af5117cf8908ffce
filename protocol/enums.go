package protocol

// Version is the only protocol version this package speaks (ClientHello.protocolVersion).
const Version = 1

// Frame and input limits (docs/protocol.md §2, §3). They are checked before any
// allocation that depends on untrusted input.
const (
	// MaxFrameBytes is the largest frame accepted on any transport (256 KiB).
	MaxFrameBytes = 262144
	// MaxDepth is the deepest nesting of arrays/maps a decoder follows.
	MaxDepth = 16
	// MaxArrayLen bounds every array/map header in a frame of either
	// direction; ServerEvents.events alone is bounded by the frame size.
	MaxArrayLen = 256
	// MaxTicketLen bounds ClientHello.ticket.
	MaxTicketLen = 1024
	// MaxIntentIDLen bounds ClientIntent.intentId; an empty id is invalid too.
	MaxIntentIDLen = 64
	// MaxClientBuildLen bounds ClientHello.clientBuild.
	MaxClientBuildLen = 128
	// MaxReasonLen bounds ClientLeave.reason and other free-text strings.
	MaxReasonLen = 256
	// MaxPrintingIDLen bounds printing ids in intents.
	MaxPrintingIDLen = 32
)

// Circle (slot) numbers, always in the owner's frame (docs/protocol.md §3.3).
const (
	SlotVanguard   = -1
	SlotBackLeft   = 0
	SlotBackCentre = 1
	SlotBackRight  = 2
	SlotFrontLeft  = 3
	SlotFrontRight = 4
)

// ResolveTrigger.effectTarget special values (docs/rules.md §6).
const (
	// EffectTargetNone means the trigger has no effect target.
	EffectTargetNone = -2
	// EffectTargetFaceDownDamage heals the oldest face-down damage card.
	EffectTargetFaceDownDamage = -1
)

// NoWinner is MatchView.winner while the match runs, and the winner of a draw.
const NoWinner = -1

// Phase is a turn phase (docs/rules.md §4).
type Phase int

// Phases.
const (
	PhaseSetup    Phase = 0
	PhaseStand    Phase = 1
	PhaseDraw     Phase = 2
	PhaseRide     Phase = 3
	PhaseMain     Phase = 4
	PhaseBattle   Phase = 5
	PhaseEnd      Phase = 6
	PhaseFinished Phase = 7
)

// Step is a battle step (docs/rules.md §4); StepNone outside the battle phase.
type Step int

// Battle steps.
const (
	StepNone   Step = 0
	StepStart  Step = 1
	StepAttack Step = 2
	StepGuard  Step = 3
	StepDrive  Step = 4
	StepDamage Step = 5
	StepClose  Step = 6
)

// Zone names a card zone in events (docs/rules.md §2).
type Zone int

// Zones.
const (
	ZoneDeck    Zone = 0
	ZoneHand    Zone = 1
	ZoneVC      Zone = 2
	ZoneRC      Zone = 3
	ZoneGC      Zone = 4
	ZoneSoul    Zone = 5
	ZoneDrop    Zone = 6
	ZoneDamage  Zone = 7
	ZoneTrigger Zone = 8
)

// TriggerType is a card's trigger icon.
type TriggerType int

// Trigger types (docs/rules.md §6; no Over, no Stand).
const (
	TriggerNone     TriggerType = 0
	TriggerCritical TriggerType = 1
	TriggerDraw     TriggerType = 2
	TriggerFront    TriggerType = 3
	TriggerHeal     TriggerType = 4
)

// CheckKind says whether a trigger check is a drive or a damage check.
type CheckKind int

// Check kinds.
const (
	CheckDrive  CheckKind = 0
	CheckDamage CheckKind = 1
)

// AbilityKey identifies an ability template (docs/rules.md §7.1): 1..10 for A1..A10,
// 11 for the sentinel keyword. A printing has at most one ability, so the key
// with the source card identifies the ability.
type AbilityKey int

// Ability templates.
const (
	AbilityNone            AbilityKey = 0
	AbilityRiddenUpon      AbilityKey = 1
	AbilityRideSearch      AbilityKey = 2
	AbilityCallModes       AbilityKey = 3
	AbilityAttackPower     AbilityKey = 4
	AbilityBoostBonus      AbilityKey = 5
	AbilityHitRetire       AbilityKey = 6
	AbilityHitDraw         AbilityKey = 7
	AbilityActDiscardPower AbilityKey = 8
	AbilityActRally        AbilityKey = 9
	AbilityGrade3Power     AbilityKey = 10
	AbilitySentinel        AbilityKey = 11
)

// AbilityOutcome is AbilityResolved.outcome (docs/rules.md §7.2).
type AbilityOutcome int

// Ability outcomes.
const (
	OutcomeResolved  AbilityOutcome = 0
	OutcomeDeclined  AbilityOutcome = 1
	OutcomeFizzled   AbilityOutcome = 2
	OutcomeNoTarget  AbilityOutcome = 3
	OutcomeUnpayable AbilityOutcome = 4
)

// ChoiceKind is what a Choice decision picks.
type ChoiceKind int

// Choice kinds.
const (
	ChoiceMode       ChoiceKind = 0
	ChoiceTarget     ChoiceKind = 1
	ChoiceSearchCard ChoiceKind = 2
)

// SoulOp says whether a card entered or left the soul.
type SoulOp int

// Soul operations.
const (
	SoulIn  SoulOp = 0
	SoulOut SoulOp = 1
)

// SoulCause says why a card entered or left the soul.
type SoulCause int

// Soul causes.
const (
	SoulCauseRide   SoulCause = 0
	SoulCauseCharge SoulCause = 1
	SoulCauseBlast  SoulCause = 2
)

// RetireCause says why a unit was retired.
type RetireCause int

// Retire causes.
const (
	RetireHit    RetireCause = 0
	RetireCall   RetireCause = 1
	RetireEffect RetireCause = 2
	RetireClose  RetireCause = 3
)

// DiscardCause says why a card was discarded from hand.
type DiscardCause int

// Discard causes.
const (
	DiscardCost DiscardCause = 0
)

// FinishReason is GameFinished.reason (docs/rules.md §9).
type FinishReason int

// Finish reasons.
const (
	FinishDamage   FinishReason = 0
	FinishDeckOut  FinishReason = 1
	FinishConceded FinishReason = 2
	FinishTimeout  FinishReason = 3
	FinishAbsence  FinishReason = 4
	FinishDraw     FinishReason = 5
)

// IntentRejectCode is ServerIntentResult.code (docs/protocol.md §3.4).
type IntentRejectCode int

// Intent reject codes.
const (
	RejectNone          IntentRejectCode = 0
	RejectIllegal       IntentRejectCode = 1
	RejectNotYourTurn   IntentRejectCode = 2
	RejectMatchFinished IntentRejectCode = 3
	RejectNotSupported  IntentRejectCode = 4
	RejectRateLimited   IntentRejectCode = 5
	RejectMalformed     IntentRejectCode = 6
	RejectStale         IntentRejectCode = 7
	// RejectSpectator answers any intent from a spectator's connection,
	// which may watch but never act (docs/protocol.md §14).
	RejectSpectator IntentRejectCode = 8
)

// ErrorCode is ServerError.code (docs/protocol.md §3.4, §9.6).
type ErrorCode int

// Error codes.
const (
	ErrorUnsupportedVersion ErrorCode = 0
	ErrorInvalidTicket      ErrorCode = 1
	ErrorTicketExpired      ErrorCode = 2
	ErrorMatchNotFound      ErrorCode = 3
	ErrorMalformedFrame     ErrorCode = 4
	ErrorRateLimited        ErrorCode = 5
	ErrorMatchFinished      ErrorCode = 6
	ErrorInternal           ErrorCode = 7
	ErrorHeartbeatTimeout   ErrorCode = 8
	ErrorSessionReplaced    ErrorCode = 9
	// ErrorSpectatorsFull refuses a spectator's hello when its match already
	// has as many spectators as it allows (WebSocket close 4429).
	ErrorSpectatorsFull ErrorCode = 10
)

// WebSocket close codes (docs/protocol.md §6).
const (
	CloseNormal             = 1000
	CloseProtocolViolation  = 4400
	CloseTicket             = 4401
	CloseHeartbeatTimeout   = 4408
	CloseReplaced           = 4409
	CloseUnsupportedVersion = 4410
	CloseRateLimited        = 4413
	CloseSpectatorsFull     = 4429
	CloseInternal           = 4500
)

// SeatSpectator is the seat of a spectator: in a spectator's ticket, its
// ServerHello.playerIndex and its MatchView.you. It owns nothing, so its
// view hides both hands and holds no legal intents (docs/protocol.md §14).
const SeatSpectator = 2
