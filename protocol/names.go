package protocol

import "strconv"

// Names of enum values, as the specs spell them. They are for logs, errors and
// the generated docs; the wire carries the integers only. A test checks these
// tables against the constant declarations, so they cannot drift.

func name(names []string, v int, typ string) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(v) + ")"
}

var phaseNames = []string{"Setup", "Stand", "Draw", "Ride", "Main", "Battle", "End", "Finished"}

// String returns the phase name ("Main").
func (p Phase) String() string { return name(phaseNames, int(p), "Phase") }

var stepNames = []string{"None", "Start", "Attack", "Guard", "Drive", "Damage", "Close"}

// String returns the battle step name ("Guard").
func (s Step) String() string { return name(stepNames, int(s), "Step") }

var zoneNames = []string{"Deck", "Hand", "VC", "RC", "GC", "Soul", "Drop", "Damage", "Trigger"}

// String returns the zone name ("GC").
func (z Zone) String() string { return name(zoneNames, int(z), "Zone") }

var triggerNames = []string{"None", "Critical", "Draw", "Front", "Heal"}

// String returns the trigger type name ("Heal").
func (t TriggerType) String() string { return name(triggerNames, int(t), "TriggerType") }

var checkKindNames = []string{"Drive", "Damage"}

// String returns the check kind name ("Drive").
func (c CheckKind) String() string { return name(checkKindNames, int(c), "CheckKind") }

var abilityKeyNames = []string{
	"None", "RiddenUpon", "RideSearch", "CallModes", "AttackPower", "BoostBonus",
	"HitRetire", "HitDraw", "ActDiscardPower", "ActRally", "Grade3Power", "Sentinel",
}

// String returns the ability template name ("HitRetire").
func (a AbilityKey) String() string { return name(abilityKeyNames, int(a), "AbilityKey") }

var outcomeNames = []string{"Resolved", "Declined", "Fizzled", "NoTarget", "Unpayable"}

// String returns the outcome name ("Declined").
func (o AbilityOutcome) String() string { return name(outcomeNames, int(o), "AbilityOutcome") }

var choiceKindNames = []string{"Mode", "Target", "SearchCard"}

// String returns the choice kind name ("Target").
func (c ChoiceKind) String() string { return name(choiceKindNames, int(c), "ChoiceKind") }

var soulOpNames = []string{"In", "Out"}

// String returns the soul operation name ("In").
func (s SoulOp) String() string { return name(soulOpNames, int(s), "SoulOp") }

var soulCauseNames = []string{"Ride", "Charge", "Blast"}

// String returns the soul cause name ("Blast").
func (s SoulCause) String() string { return name(soulCauseNames, int(s), "SoulCause") }

var retireCauseNames = []string{"Hit", "Call", "Effect", "Close"}

// String returns the retire cause name ("Hit").
func (c RetireCause) String() string { return name(retireCauseNames, int(c), "RetireCause") }

var discardCauseNames = []string{"Cost"}

// String returns the discard cause name ("Cost").
func (c DiscardCause) String() string { return name(discardCauseNames, int(c), "DiscardCause") }

var finishReasonNames = []string{"Damage", "DeckOut", "Conceded", "Timeout", "Absence", "Draw"}

// String returns the finish reason name ("DeckOut").
func (f FinishReason) String() string { return name(finishReasonNames, int(f), "FinishReason") }

var rejectCodeNames = []string{
	"None", "Illegal", "NotYourTurn", "MatchFinished", "NotSupported", "RateLimited", "Malformed", "Stale",
	"Spectator",
}

// String returns the reject code name ("NotSupported").
func (c IntentRejectCode) String() string { return name(rejectCodeNames, int(c), "IntentRejectCode") }

var errorCodeNames = []string{
	"UnsupportedVersion", "InvalidTicket", "TicketExpired", "MatchNotFound", "MalformedFrame",
	"RateLimited", "MatchFinished", "Internal", "HeartbeatTimeout", "SessionReplaced",
	"SpectatorsFull",
}

// String returns the error code name ("MalformedFrame").
func (c ErrorCode) String() string { return name(errorCodeNames, int(c), "ErrorCode") }

var intentKindNames = []string{
	"Mulligan", "FinishMulligan", "Ride", "SkipRide", "Call", "Move", "EnterBattle", "Attack", "Guard",
	"Intercept", "PassGuard", "ResolveTrigger", "SelectTrigger", "ResolveAbility", "Choose",
	"ActivateAbility", "EndTurn", "Concede",
}

// String returns the intent name ("Attack").
func (k IntentKind) String() string { return name(intentKindNames, int(k), "IntentKind") }

var eventKindNames = []string{
	"GameStarted", "TurnStarted", "PhaseStarted", "CardsDrawn", "ReturnedToDeck", "DeckShuffled",
	"StandUp", "Ride", "Soul", "Call", "Move", "Attack", "Boost", "Guard", "DriveCheck", "DamageCheck",
	"TriggerResolved", "BattleResolved", "Damage", "Retire", "Discard", "CardToHand", "DamageFlipped",
	"AbilityTriggered", "AbilityResolved", "CardSearchedView", "SearchFailedView", "GameFinished",
	"Decision",
}

// String returns the event name as docs/rules.md §10 spells it ("CardsDrawn").
func (k EventKind) String() string { return name(eventKindNames, int(k), "EventKind") }

var clientFrameNames = []string{"ClientHello", "ClientIntent", "ClientResync", "ClientPing", "ClientPong", "ClientLeave"}

// String returns the frame name ("ClientIntent").
func (k ClientFrameKind) String() string { return name(clientFrameNames, int(k), "ClientFrameKind") }

var serverFrameNames = []string{
	"ServerHello", "ServerSnapshot", "ServerEvents", "ServerIntentResult", "ServerClock",
	"ServerPing", "ServerPong", "ServerError", "ServerResumeTicket",
}

// String returns the frame name ("ServerEvents").
func (k ServerFrameKind) String() string { return name(serverFrameNames, int(k), "ServerFrameKind") }

var visibilityNames = []string{"P", "R", "O"}

// String returns the visibility letter of docs/rules.md §10: P public, R redacted, O owner only.
func (v Visibility) String() string { return name(visibilityNames, int(v), "Visibility") }
