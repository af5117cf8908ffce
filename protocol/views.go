package protocol

// MatchView is one seat's picture of a match (docs/protocol.md §3.5). It is built
// per player: the opponent's hidden information is never in it.
type MatchView struct {
	MatchID          string
	EventSeq         int64
	You              int
	ActivePlayer     int
	TurnNumber       int
	Phase            Phase
	Step             Step
	IsFinished       bool
	Winner           int
	Players          [2]PlayerView
	Battle           *BattleView
	Trigger          *TriggerView
	Choice           *ChoiceView
	Ability          *AbilityView
	Order            *OrderView
	OpponentChoosing bool
	Clock            ClockView
	LegalIntents     []Intent
	// FinishReason is why the match ended: nil while it runs, and from a
	// server older than this field. Appended last so that older clients,
	// which read a view's known fields by position, are unaffected.
	FinishReason *FinishReason
}

// PlayerView is one player's zones as seen by the viewer.
type PlayerView struct {
	Index          int
	Name           string
	HandCount      int
	DeckCount      int
	Hand           []CardView
	Vanguard       *CardView
	RearGuards     [5]*CardView
	Guardian       []CardView
	Soul           []CardView
	Drop           []CardView
	Trigger        *CardView
	FaceDownDamage int
	FaceUpDamage   []CardView
	IsDefeated     bool
}

// CardView is one visible card.
type CardView struct {
	InstanceID   int
	PrintingID   string
	Rested       bool
	FaceUp       bool
	BasePower    int
	Power        int
	BaseCritical int
	Critical     int
}

// ClockView is the decision clock (docs/protocol.md §5). Times are Unix milliseconds.
type ClockView struct {
	DecisionPlayer int
	TurnDeadlineMs int64
	Bank0Ms        int64
	Bank1Ms        int64
	IsRunning      bool
	ServerTimeMs   int64
}

// BattleView is the open battle (docs/rules.md §11). Hit is nil until decided.
type BattleView struct {
	AttackerSlot  int
	TargetSlot    int
	BoosterSlot   *int
	AttackerPower int
	TargetPower   int
	ShieldTotal   int
	PerfectGuard  bool
	DriveDone     int
	DriveTotal    int
	Hit           *bool
}

// TriggerView is an open trigger check, visible to both players.
type TriggerView struct {
	Player        int
	CheckKind     CheckKind
	Card          CardRef
	Trigger       TriggerType
	PowerTargets  []int
	EffectTargets []int
}

// ChoiceOption is one option of a Choice: a Mode, a Slot or a PrintingID,
// depending on the ChoiceView's Kind (the other fields are zero).
type ChoiceOption struct {
	Mode       int
	Slot       int
	PrintingID string
}

// ChoiceView is an open Choice decision (decider only).
type ChoiceView struct {
	Player     int
	Source     CardRef
	AbilityKey AbilityKey
	Kind       ChoiceKind
	Options    []ChoiceOption
}

// AbilityCost is what an optional ability costs.
type AbilityCost struct {
	CounterBlast int
	SoulBlast    int
	Discard      bool
}

// AbilityView is an open optional-ability decision (decider only).
type AbilityView struct {
	Player     int
	Source     CardRef
	AbilityKey AbilityKey
	Cost       AbilityCost
}

// OrderEntry is one queued ability in an Order decision.
type OrderEntry struct {
	Source     CardRef
	AbilityKey AbilityKey
}

// OrderView is an open Order decision (decider only).
type OrderView struct {
	Player  int
	Entries []OrderEntry
}
