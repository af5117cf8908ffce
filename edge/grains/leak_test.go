package grains_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/matchgrain/matchgrain/protocol"
)

// cardOcc is one card named anywhere in a decoded frame.
type cardOcc struct {
	id       int
	printing string
	seq      int64  // the event's seq, or the snapshot's eventSeq
	path     string // where in the frame, for the failure message
}

var (
	cardRefType  = reflect.TypeOf(protocol.CardRef{})
	cardViewType = reflect.TypeOf(protocol.CardView{})
)

// walkCards collects every CardRef and CardView inside v, by reflection, so
// that no field (present or added later) escapes the scan.
func walkCards(v reflect.Value, path string, seq int64, out *[]cardOcc) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkCards(v.Elem(), path, seq, out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkCards(v.Index(i), fmt.Sprintf("%s[%d]", path, i), seq, out)
		}
	case reflect.Struct:
		switch v.Type() {
		case cardRefType:
			c := v.Interface().(protocol.CardRef)
			*out = append(*out, cardOcc{c.InstanceID, c.PrintingID, seq, path})
			return
		case cardViewType:
			c := v.Interface().(protocol.CardView)
			*out = append(*out, cardOcc{c.InstanceID, c.PrintingID, seq, path})
			return
		}
		if a, ok := v.Interface().(protocol.ActivateAbility); ok {
			*out = append(*out, cardOcc{a.InstanceID, "", seq, path + ".ActivateAbility"})
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walkCards(v.Field(i), path+"."+v.Type().Field(i).Name, seq, out)
			}
		}
	}
}

// frameCards lists the cards of one frame with the seq each belongs to.
func frameCards(f protocol.ServerFrame) []cardOcc {
	var out []cardOcc
	switch f := f.(type) {
	case *protocol.ServerEvents:
		for _, e := range f.Events {
			walkCards(reflect.ValueOf(e.Event), fmt.Sprintf("event#%d(%T)", e.Seq, e.Event), e.Seq, &out)
		}
	case *protocol.ServerSnapshot:
		walkCards(reflect.ValueOf(f.View), "snapshot", f.View.EventSeq, &out)
	default:
		walkCards(reflect.ValueOf(f), fmt.Sprintf("%T", f), 0, &out)
	}
	return out
}

// frameSeq is the latest seq a frame speaks about.
func frameSeq(f protocol.ServerFrame) int64 {
	switch f := f.(type) {
	case *protocol.ServerEvents:
		return f.ToSeq
	case *protocol.ServerSnapshot:
		return f.View.EventSeq
	case *protocol.ServerIntentResult:
		return f.EventSeq
	case *protocol.ServerClock:
		return f.EventSeq
	case *protocol.ServerHello:
		return f.EventSeq
	case *protocol.ServerError:
		return f.EventSeq
	}
	return 0
}

// eventPlayer is the player an event belongs to, -1 if none.
func eventPlayer(e protocol.Event) int {
	v := reflect.ValueOf(e).Elem()
	if f := v.FieldByName("Player"); f.IsValid() && f.Kind() == reflect.Int {
		return int(f.Int())
	}
	return -1
}

// leakReport is what checkNoLeaks scanned.
type leakReport struct {
	bytesScanned  int
	framesScanned int
	hiddenIDs     int
	hiddenPrints  int
	searched      []searchedCard
}

// searchedCard is one card seat a searched out of its deck (A2, RideSearch):
// known to a from the search on, hidden from b until it goes public.
type searchedCard struct {
	id       int
	printing string
	seq      int64 // the CardSearchedView's seq
	// idPublic and printPublic are the first public event naming the card
	// or its printing in b's stream (never if none).
	idPublic, printPublic int64
	// framesHidden counts b's frames at seq..idPublic-1: the window in
	// which the card was a's secret. Zero would mean nothing was checked.
	framesHidden int
}

// searchedBy lists the distinct CardSearchedView events of seat a in a's
// own streams, in seq order.
func searchedBy(t *testing.T, ss []stream, a int) []searchedCard {
	t.Helper()
	var out []searchedCard
	for seq, e := range events(t, ss) {
		if sv, ok := e.Event.(*protocol.CardSearchedViewEvent); ok && sv.Player == a {
			out = append(out, searchedCard{id: sv.Card.InstanceID, printing: sv.Card.PrintingID, seq: seq})
		}
	}
	slices.SortFunc(out, func(x, y searchedCard) int { return cmp.Compare(x.seq, y.seq) })
	return out
}

// checkNoLeaks proves that nothing of seat a's hidden information reached
// seat b = 1-a (docs/protocol.md §7), from the recorded streams of both seats:
//
//   - a's own stream is the full-knowledge record: every instanceId a held
//     in hand (snapshots, CardsDrawn, CardSearchedView, ReturnedToDeck) and
//     every printing of a's cards;
//   - b's public events say when each card and printing became public;
//   - no decoded card field of b's frames names a hidden card of a before it
//     became public, and no raw byte of b's frames holds a printing of a
//     before its first public appearance (this also covers fields that are
//     not cards: queries, choice options, intents);
//   - b never gets a's owner-only events, a's drawn cards, a's hand, a's
//     choice/ability/order, or more than Concede while a decides;
//   - the match seed (little- and big-endian 8 bytes, decimal) is in no
//     byte sent to either seat.
func checkNoLeaks(t *testing.T, seats [2][]stream, a int, seed uint64) leakReport {
	t.Helper()
	b := 1 - a
	var rep leakReport
	hiddenID := map[int]string{} // a's cards seen in a's hand -> printing
	printsOfA := map[string]bool{}
	for _, s := range seats[a] {
		for _, wf := range s.frames {
			switch f := wf.f.(type) {
			case *protocol.ServerSnapshot:
				for _, c := range f.View.Players[a].Hand {
					hiddenID[c.InstanceID] = c.PrintingID
				}
				for _, o := range frameCards(f) {
					if o.printing != "" && bytes.Contains([]byte(o.path), []byte(fmt.Sprintf("Players[%d]", a))) {
						printsOfA[o.printing] = true
					}
				}
			case *protocol.ServerEvents:
				for _, e := range f.Events {
					switch ev := e.Event.(type) {
					case *protocol.CardsDrawnEvent:
						if ev.Player == a {
							for _, c := range ev.Cards {
								hiddenID[c.InstanceID] = c.PrintingID
							}
						}
					case *protocol.ReturnedToDeckEvent:
						if ev.Player == a {
							for _, c := range ev.Cards {
								hiddenID[c.InstanceID] = c.PrintingID
							}
						}
					case *protocol.CardSearchedViewEvent:
						if ev.Player == a {
							hiddenID[ev.Card.InstanceID] = ev.Card.PrintingID
						}
					}
				}
			}
		}
	}
	for _, p := range hiddenID {
		printsOfA[p] = true
	}
	if len(hiddenID) == 0 {
		t.Fatalf("seat %d's stream shows no hand card: the record is empty, nothing was proved", a)
	}
	rep.hiddenIDs, rep.hiddenPrints = len(hiddenID), len(printsOfA)
	rep.searched = searchedBy(t, seats[a], a)

	// When did each card and printing of a become public to b?
	const never = int64(1) << 62
	firstPublicID := map[int]int64{}
	firstPublicPrint := map[string]int64{}
	for _, s := range seats[b] {
		for _, wf := range s.frames {
			ev, ok := wf.f.(*protocol.ServerEvents)
			if !ok {
				continue
			}
			for _, e := range ev.Events {
				if protocol.EventVisibility(e.Event.EventKind()) != protocol.Public {
					continue
				}
				var occ []cardOcc
				walkCards(reflect.ValueOf(e.Event), "", e.Seq, &occ)
				for _, o := range occ {
					if _, ok := hiddenID[o.id]; ok {
						if p, seen := firstPublicID[o.id]; !seen || e.Seq < p {
							firstPublicID[o.id] = e.Seq
						}
					}
					if printsOfA[o.printing] {
						if p, seen := firstPublicPrint[o.printing]; !seen || e.Seq < p {
							firstPublicPrint[o.printing] = e.Seq
						}
					}
				}
			}
		}
	}
	publicAt := func(m map[string]int64, k string) int64 {
		if p, ok := m[k]; ok {
			return p
		}
		return never
	}
	for i := range rep.searched {
		sc := &rep.searched[i]
		sc.idPublic, sc.printPublic = never, publicAt(firstPublicPrint, sc.printing)
		if p, ok := firstPublicID[sc.id]; ok {
			sc.idPublic = p
		}
	}

	seedLE := binary.LittleEndian.AppendUint64(nil, seed)
	seedBE := binary.BigEndian.AppendUint64(nil, seed)
	seedDec := []byte(strconv.FormatUint(seed, 10))
	for seat := range 2 {
		for _, s := range seats[seat] {
			for _, needle := range [][]byte{seedLE, seedBE, seedDec} {
				if bytes.Contains(s.wire, needle) {
					t.Errorf("seat %d's traffic holds the seed bytes %x", seat, needle)
				}
			}
		}
	}

	leaks := 0
	report := func(format string, args ...any) {
		leaks++
		if leaks <= 20 {
			t.Errorf("seat %d sees seat %d's hidden information: "+format, append([]any{b, a}, args...)...)
		}
	}
	for ci, s := range seats[b] {
		rep.bytesScanned += len(s.wire)
		for fi, wf := range s.frames {
			rep.framesScanned++
			fseq := frameSeq(wf.f)
			for p := range printsOfA {
				if bytes.Contains(wf.raw, []byte(p)) && fseq < publicAt(firstPublicPrint, p) {
					report("conn %d frame %d (%T, seq %d) holds printing %q, public only at %d", ci, fi, wf.f, fseq, p, publicAt(firstPublicPrint, p))
				}
			}
			cards := frameCards(wf.f)
			// The searched cards on their own: the general checks below
			// cover them too, but a search is the one moment the server
			// handles a hidden card of a by name between draws, so its
			// window is checked and counted explicitly.
			for i := range rep.searched {
				sc := &rep.searched[i]
				if fseq >= sc.seq && fseq < sc.idPublic {
					sc.framesHidden++
				}
				for _, o := range cards {
					if o.id == sc.id && o.seq < sc.idPublic {
						report("conn %d frame %d: searched card %d (%s, searched at #%d) at %s, seq %d, public only at %d", ci, fi, sc.id, sc.printing, sc.seq, o.path, o.seq, sc.idPublic)
					}
				}
				if fseq < sc.printPublic && bytes.Contains(wf.raw, []byte(sc.printing)) {
					report("conn %d frame %d (%T, seq %d) holds searched printing %q (searched at #%d), public only at %d", ci, fi, wf.f, fseq, sc.printing, sc.seq, sc.printPublic)
				}
			}
			for _, o := range cards {
				if _, ok := hiddenID[o.id]; !ok || o.id == 0 {
					continue
				}
				p, ok := firstPublicID[o.id]
				if !ok || o.seq < p || o.seq == 0 {
					report("conn %d frame %d: hidden card %d (%s) at %s, seq %d (public at %d, ok=%v)", ci, fi, o.id, hiddenID[o.id], o.path, o.seq, p, ok)
				}
			}
			switch f := wf.f.(type) {
			case *protocol.ServerEvents:
				for _, e := range f.Events {
					if eventPlayer(e.Event) != a {
						continue
					}
					switch ev := e.Event.(type) {
					case *protocol.CardSearchedViewEvent, *protocol.SearchFailedViewEvent:
						report("owner-only event #%d %T", e.Seq, ev)
					case *protocol.CardsDrawnEvent:
						if len(ev.Cards) > 0 {
							report("drawn cards in event #%d", e.Seq)
						}
					case *protocol.ReturnedToDeckEvent:
						if len(ev.Cards) > 0 {
							report("returned cards in event #%d", e.Seq)
						}
					}
				}
			case *protocol.ServerSnapshot:
				v := &f.View
				if len(v.Players[a].Hand) > 0 {
					report("hand of %d cards in snapshot at %d", len(v.Players[a].Hand), v.EventSeq)
				}
				if v.Choice != nil && v.Choice.Player == a {
					report("choice in snapshot at %d", v.EventSeq)
				}
				if v.Ability != nil && v.Ability.Player == a {
					report("ability in snapshot at %d", v.EventSeq)
				}
				if v.Order != nil && v.Order.Player == a {
					report("order in snapshot at %d", v.EventSeq)
				}
				if !v.IsFinished && v.Clock.IsRunning && v.Clock.DecisionPlayer == a {
					for _, in := range v.LegalIntents {
						if in.IntentKind() != protocol.IntentConcede {
							report("legal intent %T while seat %d decides, snapshot at %d", in, a, v.EventSeq)
						}
					}
				}
			}
		}
	}
	if leaks > 20 {
		t.Errorf("... %d leaks in all", leaks)
	}
	return rep
}
