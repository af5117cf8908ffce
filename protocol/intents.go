package protocol

// IntentKind is the union key of an Intent (docs/protocol.md §3.3). Keys are permanent.
type IntentKind int

// Intent keys.
const (
	IntentMulligan        IntentKind = 0
	IntentFinishMulligan  IntentKind = 1
	IntentRide            IntentKind = 2
	IntentSkipRide        IntentKind = 3
	IntentCall            IntentKind = 4
	IntentMove            IntentKind = 5
	IntentEnterBattle     IntentKind = 6
	IntentAttack          IntentKind = 7
	IntentGuard           IntentKind = 8
	IntentIntercept       IntentKind = 9
	IntentPassGuard       IntentKind = 10
	IntentResolveTrigger  IntentKind = 11
	IntentSelectTrigger   IntentKind = 12
	IntentResolveAbility  IntentKind = 13
	IntentChoose          IntentKind = 14
	IntentActivateAbility IntentKind = 15
	IntentEndTurn         IntentKind = 16
	IntentConcede         IntentKind = 17
)

// intentKindCount is one past the highest known intent key.
const intentKindCount = 18

// Intent is a player command: one of the concrete types below. Intent values
// are plain data; a nil *int or *string field travels as MessagePack nil.
type Intent interface {
	IntentKind() IntentKind
}

// Mulligan returns the hand cards at HandIndexes to the deck bottom and redraws.
type Mulligan struct {
	HandIndexes []int
}

// FinishMulligan keeps the current hand.
type FinishMulligan struct{}

// Ride puts a hand card of PrintingID on the vanguard circle.
type Ride struct {
	PrintingID string
}

// SkipRide ends the ride phase without riding.
type SkipRide struct{}

// Call puts a hand card of PrintingID on rear-guard circle Slot.
type Call struct {
	PrintingID string
	Slot       int
}

// Move moves (or swaps) a rear-guard within its column.
type Move struct {
	FromSlot int
	ToSlot   int
}

// EnterBattle ends the main phase and starts the battle phase.
type EnterBattle struct{}

// Attack declares an attack; BoosterSlot nil means no boost.
type Attack struct {
	AttackerSlot int
	TargetSlot   int
	BoosterSlot  *int
}

// Guard puts a hand card on the guardian circle; DiscardPrintingID (sentinels
// only) pays the perfect-guard cost.
type Guard struct {
	PrintingID        string
	DiscardPrintingID *string
}

// Intercept moves a front-row grade-2 rear-guard to the guardian circle.
type Intercept struct {
	Slot int
}

// PassGuard ends the guard step.
type PassGuard struct{}

// ResolveTrigger picks the targets of a trigger effect.
type ResolveTrigger struct {
	PowerTarget  int
	EffectTarget int
}

// SelectTrigger picks which queued ability resolves next (an Order decision).
type SelectTrigger struct {
	Index int
}

// ResolveAbility accepts or declines an optional ability.
type ResolveAbility struct {
	Accept bool
}

// Choose picks option Index of an open Choice decision.
type Choose struct {
	Index int
}

// ActivateAbility starts the ACT ability of the unit InstanceID.
type ActivateAbility struct {
	InstanceID        int
	DiscardPrintingID *string
}

// EndTurn ends the turn.
type EndTurn struct{}

// Concede gives up the match; the server decides it, not the engine.
type Concede struct{}

// IntentKind implements Intent.
func (Mulligan) IntentKind() IntentKind { return IntentMulligan }

// IntentKind implements Intent.
func (FinishMulligan) IntentKind() IntentKind { return IntentFinishMulligan }

// IntentKind implements Intent.
func (Ride) IntentKind() IntentKind { return IntentRide }

// IntentKind implements Intent.
func (SkipRide) IntentKind() IntentKind { return IntentSkipRide }

// IntentKind implements Intent.
func (Call) IntentKind() IntentKind { return IntentCall }

// IntentKind implements Intent.
func (Move) IntentKind() IntentKind { return IntentMove }

// IntentKind implements Intent.
func (EnterBattle) IntentKind() IntentKind { return IntentEnterBattle }

// IntentKind implements Intent.
func (Attack) IntentKind() IntentKind { return IntentAttack }

// IntentKind implements Intent.
func (Guard) IntentKind() IntentKind { return IntentGuard }

// IntentKind implements Intent.
func (Intercept) IntentKind() IntentKind { return IntentIntercept }

// IntentKind implements Intent.
func (PassGuard) IntentKind() IntentKind { return IntentPassGuard }

// IntentKind implements Intent.
func (ResolveTrigger) IntentKind() IntentKind { return IntentResolveTrigger }

// IntentKind implements Intent.
func (SelectTrigger) IntentKind() IntentKind { return IntentSelectTrigger }

// IntentKind implements Intent.
func (ResolveAbility) IntentKind() IntentKind { return IntentResolveAbility }

// IntentKind implements Intent.
func (Choose) IntentKind() IntentKind { return IntentChoose }

// IntentKind implements Intent.
func (ActivateAbility) IntentKind() IntentKind { return IntentActivateAbility }

// IntentKind implements Intent.
func (EndTurn) IntentKind() IntentKind { return IntentEndTurn }

// IntentKind implements Intent.
func (Concede) IntentKind() IntentKind { return IntentConcede }

// IntPtr returns a pointer to v, for optional intent fields.
func IntPtr(v int) *int { return &v }

// StringPtr returns a pointer to v, for optional intent fields.
func StringPtr(v string) *string { return &v }
