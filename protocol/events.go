package protocol

// EventKind is the union key of an Event (docs/rules.md §10). Keys are permanent:
// new events are appended with new keys, a key is never reused.
type EventKind int

// Event keys.
const (
	EventGameStarted      EventKind = 0
	EventTurnStarted      EventKind = 1
	EventPhaseStarted     EventKind = 2
	EventCardsDrawn       EventKind = 3
	EventReturnedToDeck   EventKind = 4
	EventDeckShuffled     EventKind = 5
	EventStandUp          EventKind = 6
	EventRide             EventKind = 7
	EventSoul             EventKind = 8
	EventCall             EventKind = 9
	EventMove             EventKind = 10
	EventAttack           EventKind = 11
	EventBoost            EventKind = 12
	EventGuard            EventKind = 13
	EventDriveCheck       EventKind = 14
	EventDamageCheck      EventKind = 15
	EventTriggerResolved  EventKind = 16
	EventBattleResolved   EventKind = 17
	EventDamage           EventKind = 18
	EventRetire           EventKind = 19
	EventDiscard          EventKind = 20
	EventCardToHand       EventKind = 21
	EventDamageFlipped    EventKind = 22
	EventAbilityTriggered EventKind = 23
	EventAbilityResolved  EventKind = 24
	EventCardSearchedView EventKind = 25
	EventSearchFailedView EventKind = 26
	EventGameFinished     EventKind = 27
	EventDecision         EventKind = 28
)

// eventKindCount is one past the highest known event key.
const eventKindCount = 29

// Visibility says who may see an event (docs/rules.md §10).
type Visibility int

// Visibilities.
const (
	// Public events go to both seats unchanged.
	Public Visibility = iota
	// Redacted events go to the opponent with their card lists emptied.
	Redacted
	// OwnerOnly events never reach the opponent (a seq gap there).
	OwnerOnly
)

// Event is one game event: one of the concrete *Event types below.
type Event interface {
	EventKind() EventKind
}

// CardRef names one physical card: its match-unique instance id and printing.
type CardRef struct {
	InstanceID int
	PrintingID string
}

// EventEnvelope is one event with its match-global sequence number.
type EventEnvelope struct {
	Seq   int64
	Event Event
}

// GameStartedEvent is always seq 1.
type GameStartedEvent struct {
	FirstPlayer int
	DeckSize    [2]int
}

// TurnStartedEvent starts a turn.
type TurnStartedEvent struct {
	TurnNumber int
	Player     int
}

// PhaseStartedEvent announces a phase (and battle step).
type PhaseStartedEvent struct {
	Phase Phase
	Step  Step
}

// CardsDrawnEvent: Player drew Count cards (Cards empty for the opponent).
type CardsDrawnEvent struct {
	Player int
	Count  int
	Cards  []CardRef
}

// ReturnedToDeckEvent: cards went from hand to the deck (Cards empty for the opponent).
type ReturnedToDeckEvent struct {
	Player   int
	Count    int
	Cards    []CardRef
	ToBottom bool
}

// DeckShuffledEvent: Player's deck was shuffled.
type DeckShuffledEvent struct {
	Player int
}

// StandUpEvent: both starting vanguards turn face up.
type StandUpEvent struct {
	Vanguards [2]CardRef
}

// RideEvent: Card rode on top of Previous.
type RideEvent struct {
	Player   int
	Card     CardRef
	Previous CardRef
}

// SoulEvent: a card entered or left the soul.
type SoulEvent struct {
	Player int
	Card   CardRef
	Op     SoulOp
	Cause  SoulCause
}

// CallEvent: Card was called to Slot.
type CallEvent struct {
	Player int
	Card   CardRef
	Slot   int
}

// MoveEvent: Card moved; Swapped is the unit that took its old circle, if any.
type MoveEvent struct {
	Player   int
	Card     CardRef
	FromSlot int
	ToSlot   int
	Swapped  *CardRef
}

// AttackEvent: an attack was declared.
type AttackEvent struct {
	Player       int
	Attacker     CardRef
	AttackerSlot int
	Target       CardRef
	TargetSlot   int
}

// BoostEvent: the attack is boosted.
type BoostEvent struct {
	Player      int
	Booster     CardRef
	BoosterSlot int
}

// GuardEvent: Card went to the guardian circle from hand or a rear-guard circle.
type GuardEvent struct {
	Player   int
	Card     CardRef
	FromZone Zone
	FromSlot int
	Shield   int
	Perfect  bool
}

// DriveCheckEvent: drive check Index (1-based) of Total revealed Card.
type DriveCheckEvent struct {
	Player  int
	Card    CardRef
	Trigger TriggerType
	Index   int
	Total   int
}

// DamageCheckEvent: damage check Index (1-based) of Total revealed Card.
type DamageCheckEvent struct {
	Player  int
	Card    CardRef
	Trigger TriggerType
	Index   int
	Total   int
}

// TriggerResolvedEvent: a trigger effect was applied; Healed is the damage card healed, if any.
type TriggerResolvedEvent struct {
	Player       int
	Card         CardRef
	Trigger      TriggerType
	PowerTarget  int
	EffectTarget int
	Healed       *CardRef
}

// BattleResolvedEvent: the outcome of a battle at the damage step.
type BattleResolvedEvent struct {
	Hit           bool
	AttackerPower int
	DefenderPower int
	PerfectGuard  bool
}

// DamageEvent: Card went face up to Player's damage zone, now DamageCount cards.
type DamageEvent struct {
	Player      int
	Card        CardRef
	DamageCount int
}

// RetireEvent: a unit went to the drop zone.
type RetireEvent struct {
	Player   int
	Card     CardRef
	FromZone Zone
	FromSlot int
	Cause    RetireCause
}

// DiscardEvent: a hand card was discarded.
type DiscardEvent struct {
	Player int
	Card   CardRef
	Cause  DiscardCause
}

// CardToHandEvent: a checked card went to hand (not a draw).
type CardToHandEvent struct {
	Player   int
	Card     CardRef
	FromZone Zone
}

// DamageFlippedEvent: damage cards were turned face down (CB) or face up (counter charge).
type DamageFlippedEvent struct {
	Player int
	Cards  []CardRef
	FaceUp bool
}

// AbilityTriggeredEvent: an ability was triggered or activated.
type AbilityTriggeredEvent struct {
	Player     int
	Source     CardRef
	AbilityKey AbilityKey
}

// AbilityResolvedEvent: an ability finished; Mode and Target are nil when they
// do not apply; AddedToHand counts cards the owner gained from hidden zones.
type AbilityResolvedEvent struct {
	Player      int
	Source      CardRef
	AbilityKey  AbilityKey
	Outcome     AbilityOutcome
	Mode        *int
	Target      *int
	AddedToHand int
}

// CardSearchedViewEvent (owner only): Card was searched out of the deck.
type CardSearchedViewEvent struct {
	Player int
	Card   CardRef
	Query  string
}

// SearchFailedViewEvent (owner only): a search found nothing.
type SearchFailedViewEvent struct {
	Player int
	Query  string
}

// GameFinishedEvent is the last event of every match; Winner is NoWinner on a draw.
type GameFinishedEvent struct {
	Winner int
	Reason FinishReason
}

// DecisionEvent ends every batch of events (docs/protocol.md §13): it says
// who decides next and carries what the rules derived that no other event
// states, so a client can keep its whole view from events and act without a
// snapshot. Player is the decider, -1 when the match has
// finished (then GameFinished follows at once).
//
// It is redacted: the copy for any seat but Player has Choice, Ability, Order
// nil and LegalIntents empty, and Units without the other seat's face-down
// cards. What stays is what that seat's snapshot already shows.
type DecisionEvent struct {
	Player int
	// Pending: an Order, Ability or Choice decision is open (the opponent's
	// MatchView.opponentChoosing).
	Pending bool
	// Trigger is the open trigger check, as in MatchView.trigger.
	Trigger *TriggerView
	// Battle is the open battle with its power totals, as in MatchView.battle.
	Battle *BattleView
	// Units lists every unit on a circle whose state is not its printed one:
	// rested, power or critical other than printed, or face down (the latter
	// to its owner only). Every unit not listed stands, face up, at printed
	// power and critical.
	Units []UnitState
	// Choice, Ability and Order are the decider's open decision (owner only).
	Choice  *ChoiceView
	Ability *AbilityView
	Order   *OrderView
	// LegalIntents is the decider's list, as in MatchView.legalIntents
	// (owner only; empty for everyone else).
	LegalIntents []Intent
}

// UnitState is one unit's derived state in a DecisionEvent.
type UnitState struct {
	Player   int
	Slot     int
	Card     CardRef
	Rested   bool
	FaceUp   bool
	Power    int
	Critical int
}

// EventKind implements Event.
func (*GameStartedEvent) EventKind() EventKind { return EventGameStarted }

// EventKind implements Event.
func (*TurnStartedEvent) EventKind() EventKind { return EventTurnStarted }

// EventKind implements Event.
func (*PhaseStartedEvent) EventKind() EventKind { return EventPhaseStarted }

// EventKind implements Event.
func (*CardsDrawnEvent) EventKind() EventKind { return EventCardsDrawn }

// EventKind implements Event.
func (*ReturnedToDeckEvent) EventKind() EventKind { return EventReturnedToDeck }

// EventKind implements Event.
func (*DeckShuffledEvent) EventKind() EventKind { return EventDeckShuffled }

// EventKind implements Event.
func (*StandUpEvent) EventKind() EventKind { return EventStandUp }

// EventKind implements Event.
func (*RideEvent) EventKind() EventKind { return EventRide }

// EventKind implements Event.
func (*SoulEvent) EventKind() EventKind { return EventSoul }

// EventKind implements Event.
func (*CallEvent) EventKind() EventKind { return EventCall }

// EventKind implements Event.
func (*MoveEvent) EventKind() EventKind { return EventMove }

// EventKind implements Event.
func (*AttackEvent) EventKind() EventKind { return EventAttack }

// EventKind implements Event.
func (*BoostEvent) EventKind() EventKind { return EventBoost }

// EventKind implements Event.
func (*GuardEvent) EventKind() EventKind { return EventGuard }

// EventKind implements Event.
func (*DriveCheckEvent) EventKind() EventKind { return EventDriveCheck }

// EventKind implements Event.
func (*DamageCheckEvent) EventKind() EventKind { return EventDamageCheck }

// EventKind implements Event.
func (*TriggerResolvedEvent) EventKind() EventKind { return EventTriggerResolved }

// EventKind implements Event.
func (*BattleResolvedEvent) EventKind() EventKind { return EventBattleResolved }

// EventKind implements Event.
func (*DamageEvent) EventKind() EventKind { return EventDamage }

// EventKind implements Event.
func (*RetireEvent) EventKind() EventKind { return EventRetire }

// EventKind implements Event.
func (*DiscardEvent) EventKind() EventKind { return EventDiscard }

// EventKind implements Event.
func (*CardToHandEvent) EventKind() EventKind { return EventCardToHand }

// EventKind implements Event.
func (*DamageFlippedEvent) EventKind() EventKind { return EventDamageFlipped }

// EventKind implements Event.
func (*AbilityTriggeredEvent) EventKind() EventKind { return EventAbilityTriggered }

// EventKind implements Event.
func (*AbilityResolvedEvent) EventKind() EventKind { return EventAbilityResolved }

// EventKind implements Event.
func (*CardSearchedViewEvent) EventKind() EventKind { return EventCardSearchedView }

// EventKind implements Event.
func (*SearchFailedViewEvent) EventKind() EventKind { return EventSearchFailedView }

// EventKind implements Event.
func (*GameFinishedEvent) EventKind() EventKind { return EventGameFinished }

// EventKind implements Event.
func (*DecisionEvent) EventKind() EventKind { return EventDecision }

// EventVisibility returns who may see events of kind k (docs/rules.md §10).
func EventVisibility(k EventKind) Visibility {
	switch k {
	case EventCardsDrawn, EventReturnedToDeck, EventDecision:
		return Redacted
	case EventCardSearchedView, EventSearchFailedView:
		return OwnerOnly
	default:
		return Public
	}
}
