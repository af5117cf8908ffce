package protocol

import (
	"fmt"
	"math"
)

// DecodeClientFrame decodes one client frame from untrusted bytes. It is safe
// on any input: a frame over MaxFrameBytes is refused before its bytes are
// read, and everything else decodes into a fixed schema within MaxDepth,
// MaxArrayLen and the per-field string limits, or fails with an error wrapping
// ErrMalformed (see errors.go for how the edge answers each error).
//
// A ClientIntent whose intent key is unknown returns the *ClientIntent with
// IntentID and BasedOnSeq set and Intent nil, together with an
// *UnknownIntentError (errors.Is(err, ErrUnknownIntent)).
//
// The returned frame does not alias b.
func DecodeClientFrame(b []byte) (ClientFrame, error) {
	if len(b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, len(b), MaxFrameBytes)
	}
	r := reader{b: b, client: true}
	f := r.clientFrame()
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	if r.unknownIntent {
		ci, ok := f.(*ClientIntent)
		if !ok {
			return nil, fmt.Errorf("%w: unknown intent outside ClientIntent", ErrMalformed)
		}
		return ci, &UnknownIntentError{IntentID: ci.IntentID, Key: r.unknownIntentKey}
	}
	return f, nil
}

// DecodeServerFrame decodes one server frame; the Go client library and tests
// use it. It keeps the same size, depth and array limits as
// DecodeClientFrame (ServerEvents.events is bounded by the frame size only)
// but no per-field string limits. For forward compatibility an unknown event
// key decodes to *UnknownEvent and an unknown intent key in legalIntents to
// UnknownIntent; an unknown frame key is ErrMalformed.
//
// The returned frame does not alias b.
func DecodeServerFrame(b []byte) (ServerFrame, error) {
	if len(b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, len(b), MaxFrameBytes)
	}
	r := reader{b: b}
	f := r.serverFrame()
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return f, nil
}

// DecodeEvent decodes one event union value written by AppendEvent, with the
// rules of DecodeServerFrame (an unknown key gives *UnknownEvent).
func DecodeEvent(b []byte) (Event, error) {
	if len(b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, len(b), MaxFrameBytes)
	}
	r := reader{b: b}
	ev := r.event("Event")
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return ev, nil
}

// DecodeIntent decodes one intent union value written by AppendIntent, with
// the rules of DecodeClientFrame. An unknown key is an *UnknownIntentError
// with an empty IntentID.
func DecodeIntent(b []byte) (Intent, error) {
	if len(b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, len(b), MaxFrameBytes)
	}
	r := reader{b: b, client: true}
	it := r.intent("Intent")
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	if r.unknownIntent {
		return nil, &UnknownIntentError{Key: r.unknownIntentKey}
	}
	return it, nil
}

// end rejects bytes after the value: a frame is exactly one MessagePack value.
func (r *reader) end() {
	if r.err == nil && r.off != len(r.b) {
		r.fail("%d trailing bytes after the frame", len(r.b)-r.off)
	}
}

// kindInt converts a union key to a Go int kind, failing if it does not fit.
func (r *reader) kindInt(key int64, field string) int {
	if key < math.MinInt || key > math.MaxInt {
		r.fail("%s key %d does not fit int", field, key)
		return 0
	}
	return int(key)
}

// Client frames.

func (r *reader) clientFrame() ClientFrame {
	key := r.unionKey("ClientFrame")
	if r.err != nil {
		return nil
	}
	var f ClientFrame
	switch key {
	case int64(ClientHelloKind):
		v := &ClientHello{}
		n := r.open("ClientHello")
		if n > 0 {
			v.ProtocolVersion = r.int("ClientHello.protocolVersion")
		}
		if n > 1 {
			v.Ticket = r.str("ClientHello.ticket", 0, MaxTicketLen)
		}
		if n > 2 {
			v.ClientBuild = r.str("ClientHello.clientBuild", 0, MaxClientBuildLen)
		}
		if n > 3 {
			v.ResumeFromSeq = r.i64("ClientHello.resumeFromSeq")
		}
		if n > 4 {
			v.ResumeTickets = r.bool("ClientHello.resumeTickets")
		}
		r.close(n, 5)
		f = v
	case int64(ClientIntentKind):
		v := &ClientIntent{}
		n := r.open("ClientIntent")
		// intentId (1..64 bytes) and intent have no usable zero value, so a
		// ClientIntent cannot be shortened.
		if r.err == nil && n < 3 {
			r.fail("ClientIntent: want intentId, basedOnSeq and intent, got %d fields", n)
		}
		v.IntentID = r.str("ClientIntent.intentId", 1, MaxIntentIDLen)
		v.BasedOnSeq = r.i64("ClientIntent.basedOnSeq")
		v.Intent = r.intent("ClientIntent.intent")
		r.close(n, 3)
		f = v
	case int64(ClientResyncKind):
		v := &ClientResync{}
		n := r.open("ClientResync")
		if n > 0 {
			v.FromSeq = r.i64("ClientResync.fromSeq")
		}
		if n > 1 {
			v.FullSnapshot = r.bool("ClientResync.fullSnapshot")
		}
		r.close(n, 2)
		f = v
	case int64(ClientPingKind):
		v := &ClientPing{}
		n := r.open("ClientPing")
		if n > 0 {
			v.Nonce = r.i64("ClientPing.nonce")
		}
		if n > 1 {
			v.ClientTimeMs = r.i64("ClientPing.clientTimeMs")
		}
		r.close(n, 2)
		f = v
	case int64(ClientPongKind):
		v := &ClientPong{}
		n := r.open("ClientPong")
		if n > 0 {
			v.Nonce = r.i64("ClientPong.nonce")
		}
		r.close(n, 1)
		f = v
	case int64(ClientLeaveKind):
		v := &ClientLeave{}
		n := r.open("ClientLeave")
		if n > 0 {
			v.Reason = r.str("ClientLeave.reason", 0, MaxReasonLen)
		}
		r.close(n, 1)
		f = v
	default:
		r.fail("unknown client frame key %d", key)
		return nil
	}
	r.close(2, 2)
	return f
}

// Server frames.

func (r *reader) serverFrame() ServerFrame {
	key := r.unionKey("ServerFrame")
	if r.err != nil {
		return nil
	}
	var f ServerFrame
	switch key {
	case int64(ServerHelloKind):
		v := &ServerHello{}
		n := r.open("ServerHello")
		if n > 0 {
			v.ProtocolVersion = r.int("ServerHello.protocolVersion")
		}
		if n > 1 {
			v.MatchID = r.str("ServerHello.matchId", 0, 0)
		}
		if n > 2 {
			v.PlayerIndex = r.int("ServerHello.playerIndex")
		}
		if n > 3 {
			v.Resumed = r.bool("ServerHello.resumed")
		}
		if n > 4 {
			v.EventSeq = r.i64("ServerHello.eventSeq")
		}
		if n > 5 {
			v.ServerTimeMs = r.i64("ServerHello.serverTimeMs")
		}
		r.close(n, 6)
		f = v
	case int64(ServerSnapshotKind):
		v := &ServerSnapshot{}
		n := r.open("ServerSnapshot")
		if n > 0 {
			r.matchView(&v.View)
		}
		r.close(n, 1)
		f = v
	case int64(ServerEventsKind):
		f = r.serverEvents()
	case int64(ServerIntentResultKind):
		v := &ServerIntentResult{}
		n := r.open("ServerIntentResult")
		if n > 0 {
			v.IntentID = r.str("ServerIntentResult.intentId", 0, 0)
		}
		if n > 1 {
			v.Accepted = r.bool("ServerIntentResult.accepted")
		}
		if n > 2 {
			v.Code = IntentRejectCode(r.int("ServerIntentResult.code"))
		}
		if n > 3 {
			v.Reason = r.str("ServerIntentResult.reason", 0, 0)
		}
		if n > 4 {
			v.EventSeq = r.i64("ServerIntentResult.eventSeq")
		}
		if n > 5 {
			v.Duplicate = r.bool("ServerIntentResult.duplicate")
		}
		r.close(n, 6)
		f = v
	case int64(ServerClockKind):
		v := &ServerClock{}
		n := r.open("ServerClock")
		if n > 0 {
			r.clockView(&v.Clock)
		}
		if n > 1 {
			v.EventSeq = r.i64("ServerClock.eventSeq")
		}
		r.close(n, 2)
		f = v
	case int64(ServerPingKind):
		v := &ServerPing{}
		n := r.open("ServerPing")
		if n > 0 {
			v.Nonce = r.i64("ServerPing.nonce")
		}
		if n > 1 {
			v.ServerTimeMs = r.i64("ServerPing.serverTimeMs")
		}
		r.close(n, 2)
		f = v
	case int64(ServerPongKind):
		v := &ServerPong{}
		n := r.open("ServerPong")
		if n > 0 {
			v.Nonce = r.i64("ServerPong.nonce")
		}
		if n > 1 {
			v.ServerTimeMs = r.i64("ServerPong.serverTimeMs")
		}
		r.close(n, 2)
		f = v
	case int64(ServerErrorKind):
		v := &ServerError{}
		n := r.open("ServerError")
		if n > 0 {
			v.Code = ErrorCode(r.int("ServerError.code"))
		}
		if n > 1 {
			v.Message = r.str("ServerError.message", 0, 0)
		}
		if n > 2 {
			v.Fatal = r.bool("ServerError.fatal")
		}
		if n > 3 {
			v.EventSeq = r.i64("ServerError.eventSeq")
		}
		r.close(n, 4)
		f = v
	case int64(ServerResumeTicketKind):
		v := &ServerResumeTicket{}
		n := r.open("ServerResumeTicket")
		if n > 0 {
			v.Ticket = r.str("ServerResumeTicket.ticket", 0, MaxTicketLen)
		}
		if n > 1 {
			v.ExpiresAtMs = r.i64("ServerResumeTicket.expiresAtMs")
		}
		r.close(n, 2)
		f = v
	default:
		r.fail("unknown server frame key %d", key)
		return nil
	}
	r.close(2, 2)
	return f
}

// minEnvelopeBytes is the smallest EventEnvelope on the wire:
// [seq, [key, []]] = 0x92 seq 0x92 key 0x90.
const minEnvelopeBytes = 5

func (r *reader) serverEvents() *ServerEvents {
	v := &ServerEvents{}
	n := r.open("ServerEvents")
	if n > 0 {
		v.FromSeq = r.i64("ServerEvents.fromSeq")
	}
	if n > 1 {
		v.ToSeq = r.i64("ServerEvents.toSeq")
	}
	if n > 2 {
		// The one array not capped by MaxArrayLen: a resync may carry many
		// events. Each takes at least minEnvelopeBytes, which bounds the
		// allocation by the frame size.
		m := r.openMax("ServerEvents.events", math.MaxInt)
		if r.err == nil && m > r.left()/minEnvelopeBytes {
			r.fail("ServerEvents.events: %d events cannot fit in %d bytes", m, r.left())
		}
		if r.err == nil && m > 0 {
			v.Events = make([]EventEnvelope, m)
		}
		for i := 0; i < m && r.err == nil; i++ {
			e := &v.Events[i]
			k := r.open("EventEnvelope")
			if r.err == nil && k < 2 {
				r.fail("EventEnvelope: want seq and event, got %d fields", k)
			}
			e.Seq = r.i64("EventEnvelope.seq")
			e.Event = r.event("EventEnvelope.event")
			r.close(k, 2)
		}
		r.close(m, m)
	}
	r.close(n, 3)
	return v
}

// Intents.

func (r *reader) intent(field string) Intent {
	key := r.unionKey(field)
	if r.err != nil {
		return nil
	}
	var it Intent
	switch key {
	case int64(IntentMulligan):
		var v Mulligan
		n := r.open("Mulligan")
		if n > 0 {
			v.HandIndexes = r.ints("Mulligan.handIndexes")
		}
		r.close(n, 1)
		it = v
	case int64(IntentFinishMulligan):
		r.close(r.open("FinishMulligan"), 0)
		it = FinishMulligan{}
	case int64(IntentRide):
		var v Ride
		n := r.open("Ride")
		if n > 0 {
			v.PrintingID = r.str("Ride.printingId", 0, MaxPrintingIDLen)
		}
		r.close(n, 1)
		it = v
	case int64(IntentSkipRide):
		r.close(r.open("SkipRide"), 0)
		it = SkipRide{}
	case int64(IntentCall):
		var v Call
		n := r.open("Call")
		if n > 0 {
			v.PrintingID = r.str("Call.printingId", 0, MaxPrintingIDLen)
		}
		if n > 1 {
			v.Slot = r.int("Call.slot")
		}
		r.close(n, 2)
		it = v
	case int64(IntentMove):
		var v Move
		n := r.open("Move")
		if n > 0 {
			v.FromSlot = r.int("Move.fromSlot")
		}
		if n > 1 {
			v.ToSlot = r.int("Move.toSlot")
		}
		r.close(n, 2)
		it = v
	case int64(IntentEnterBattle):
		r.close(r.open("EnterBattle"), 0)
		it = EnterBattle{}
	case int64(IntentAttack):
		var v Attack
		n := r.open("Attack")
		if n > 0 {
			v.AttackerSlot = r.int("Attack.attackerSlot")
		}
		if n > 1 {
			v.TargetSlot = r.int("Attack.targetSlot")
		}
		if n > 2 {
			v.BoosterSlot = r.optInt("Attack.boosterSlot")
		}
		r.close(n, 3)
		it = v
	case int64(IntentGuard):
		var v Guard
		n := r.open("Guard")
		if n > 0 {
			v.PrintingID = r.str("Guard.printingId", 0, MaxPrintingIDLen)
		}
		if n > 1 {
			v.DiscardPrintingID = r.optStr("Guard.discardPrintingId", MaxPrintingIDLen)
		}
		r.close(n, 2)
		it = v
	case int64(IntentIntercept):
		var v Intercept
		n := r.open("Intercept")
		if n > 0 {
			v.Slot = r.int("Intercept.slot")
		}
		r.close(n, 1)
		it = v
	case int64(IntentPassGuard):
		r.close(r.open("PassGuard"), 0)
		it = PassGuard{}
	case int64(IntentResolveTrigger):
		var v ResolveTrigger
		n := r.open("ResolveTrigger")
		if n > 0 {
			v.PowerTarget = r.int("ResolveTrigger.powerTarget")
		}
		if n > 1 {
			v.EffectTarget = r.int("ResolveTrigger.effectTarget")
		}
		r.close(n, 2)
		it = v
	case int64(IntentSelectTrigger):
		var v SelectTrigger
		n := r.open("SelectTrigger")
		if n > 0 {
			v.Index = r.int("SelectTrigger.index")
		}
		r.close(n, 1)
		it = v
	case int64(IntentResolveAbility):
		var v ResolveAbility
		n := r.open("ResolveAbility")
		if n > 0 {
			v.Accept = r.bool("ResolveAbility.accept")
		}
		r.close(n, 1)
		it = v
	case int64(IntentChoose):
		var v Choose
		n := r.open("Choose")
		if n > 0 {
			v.Index = r.int("Choose.index")
		}
		r.close(n, 1)
		it = v
	case int64(IntentActivateAbility):
		var v ActivateAbility
		n := r.open("ActivateAbility")
		if n > 0 {
			v.InstanceID = r.int("ActivateAbility.instanceId")
		}
		if n > 1 {
			v.DiscardPrintingID = r.optStr("ActivateAbility.discardPrintingId", MaxPrintingIDLen)
		}
		r.close(n, 2)
		it = v
	case int64(IntentEndTurn):
		r.close(r.open("EndTurn"), 0)
		it = EndTurn{}
	case int64(IntentConcede):
		r.close(r.open("Concede"), 0)
		it = Concede{}
	default:
		// A newer intent: skip its body whatever its shape, within the limits.
		r.skip()
		if r.client {
			r.unknownIntent = true
			r.unknownIntentKey = key
		} else {
			it = UnknownIntent{Key: IntentKind(r.kindInt(key, field))}
		}
	}
	r.close(2, 2)
	if r.err != nil {
		return nil
	}
	return it
}

func (r *reader) optInt(field string) *int {
	if r.isNil() {
		return nil
	}
	v := r.int(field)
	return &v
}

func (r *reader) optBool(field string) *bool {
	if r.isNil() {
		return nil
	}
	v := r.bool(field)
	return &v
}

func (r *reader) optStr(field string, max int) *string {
	if r.isNil() {
		return nil
	}
	v := r.str(field, 0, max)
	return &v
}

func (r *reader) ints(field string) []int {
	n := r.open(field)
	var out []int
	if r.err == nil && n > 0 {
		out = make([]int, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		out[i] = r.int(field)
	}
	r.close(n, n)
	return out
}
