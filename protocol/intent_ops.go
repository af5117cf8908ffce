package protocol

import "slices"

// derefIntent returns the value form of an intent given as a pointer
// (*Call → Call), so that callers switch over value types only. A nil pointer
// becomes a nil Intent. Value forms are returned as they are, without
// allocating.
func derefIntent(it Intent) Intent {
	switch v := it.(type) {
	case *Mulligan:
		if v != nil {
			return *v
		}
	case *FinishMulligan:
		if v != nil {
			return *v
		}
	case *Ride:
		if v != nil {
			return *v
		}
	case *SkipRide:
		if v != nil {
			return *v
		}
	case *Call:
		if v != nil {
			return *v
		}
	case *Move:
		if v != nil {
			return *v
		}
	case *EnterBattle:
		if v != nil {
			return *v
		}
	case *Attack:
		if v != nil {
			return *v
		}
	case *Guard:
		if v != nil {
			return *v
		}
	case *Intercept:
		if v != nil {
			return *v
		}
	case *PassGuard:
		if v != nil {
			return *v
		}
	case *ResolveTrigger:
		if v != nil {
			return *v
		}
	case *SelectTrigger:
		if v != nil {
			return *v
		}
	case *ResolveAbility:
		if v != nil {
			return *v
		}
	case *Choose:
		if v != nil {
			return *v
		}
	case *ActivateAbility:
		if v != nil {
			return *v
		}
	case *EndTurn:
		if v != nil {
			return *v
		}
	case *Concede:
		if v != nil {
			return *v
		}
	case *UnknownIntent:
		if v != nil {
			return *v
		}
	default:
		return it
	}
	return nil
}

// IntentsEqual reports whether a and b are the same intent: the same kind and
// equal fields, following optional pointers and comparing slices element by
// element (a nil slice equals an empty one, as on the wire). A pointer form
// (*Call) equals its value form (Call). Two nil intents are equal. The engine
// uses it to find a received intent in its list of legal intents; it does not
// allocate for value forms.
func IntentsEqual(a, b Intent) bool {
	a, b = derefIntent(a), derefIntent(b)
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.IntentKind() != b.IntentKind() {
		return false
	}
	switch x := a.(type) {
	case Mulligan:
		y, ok := b.(Mulligan)
		return ok && slices.Equal(x.HandIndexes, y.HandIndexes)
	case Ride:
		y, ok := b.(Ride)
		return ok && x == y
	case Call:
		y, ok := b.(Call)
		return ok && x == y
	case Move:
		y, ok := b.(Move)
		return ok && x == y
	case Attack:
		y, ok := b.(Attack)
		return ok && x.AttackerSlot == y.AttackerSlot && x.TargetSlot == y.TargetSlot &&
			optEqual(x.BoosterSlot, y.BoosterSlot)
	case Guard:
		y, ok := b.(Guard)
		return ok && x.PrintingID == y.PrintingID && optEqual(x.DiscardPrintingID, y.DiscardPrintingID)
	case Intercept:
		y, ok := b.(Intercept)
		return ok && x == y
	case ResolveTrigger:
		y, ok := b.(ResolveTrigger)
		return ok && x == y
	case SelectTrigger:
		y, ok := b.(SelectTrigger)
		return ok && x == y
	case ResolveAbility:
		y, ok := b.(ResolveAbility)
		return ok && x == y
	case Choose:
		y, ok := b.(Choose)
		return ok && x == y
	case ActivateAbility:
		y, ok := b.(ActivateAbility)
		return ok && x.InstanceID == y.InstanceID && optEqual(x.DiscardPrintingID, y.DiscardPrintingID)
	case UnknownIntent:
		y, ok := b.(UnknownIntent)
		return ok && x == y
	case FinishMulligan, SkipRide, EnterBattle, PassGuard, EndTurn, Concede:
		// Bodyless: equal kinds are equal intents, but the types must match too.
		return sameBodyless(a, b)
	default:
		return false
	}
}

// sameBodyless compares two field-less intents by dynamic type.
func sameBodyless(a, b Intent) bool {
	switch a.(type) {
	case FinishMulligan:
		_, ok := b.(FinishMulligan)
		return ok
	case SkipRide:
		_, ok := b.(SkipRide)
		return ok
	case EnterBattle:
		_, ok := b.(EnterBattle)
		return ok
	case PassGuard:
		_, ok := b.(PassGuard)
		return ok
	case EndTurn:
		_, ok := b.(EndTurn)
		return ok
	case Concede:
		_, ok := b.(Concede)
		return ok
	}
	return false
}

func optEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func cloneOpt[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// CloneIntent returns a deep copy of it in value form: slices and optional
// pointers are copied, so the copy shares no memory with it. A nil intent
// clones to nil.
func CloneIntent(it Intent) Intent {
	switch v := derefIntent(it).(type) {
	case Mulligan:
		return Mulligan{HandIndexes: slices.Clone(v.HandIndexes)}
	case Attack:
		v.BoosterSlot = cloneOpt(v.BoosterSlot)
		return v
	case Guard:
		v.DiscardPrintingID = cloneOpt(v.DiscardPrintingID)
		return v
	case ActivateAbility:
		v.DiscardPrintingID = cloneOpt(v.DiscardPrintingID)
		return v
	default:
		// Every other intent is a plain value without references.
		return v
	}
}
