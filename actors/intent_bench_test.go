package actors

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/protocol"
)

// BenchmarkSubmittedIntent compares what the grain spends to get a
// submitted intent: decoding Frame (a remote edge) against taking the value
// a local seat or a bot passed (SubmitIntent.Intent).
func BenchmarkSubmittedIntent(b *testing.B) {
	ci := &protocol.ClientIntent{IntentID: "0f8e2a4c-5b1d-4e7a-9c3f-2d6b8a1e0c57", BasedOnSeq: 41,
		Intent: protocol.Call{PrintingID: "E-01", Slot: 3}}
	frame, err := protocol.EncodeClientFrame(ci)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    *SubmitIntent
	}{
		{"frame", &SubmitIntent{Frame: frame}},
		{"local", &SubmitIntent{Intent: ci}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := submittedIntent(tc.m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSubmitIntentCarriesTheIntentOnce: a grain on the sender's member
// takes the sender's value as it is; one on another member gets the
// intent's canonical frame, encoded only for the wire, on the same wire
// fields as a sender that gives the frame itself (members of both kinds
// understand each other), and decodes it to the same intent.
func TestSubmitIntentCarriesTheIntentOnce(t *testing.T) {
	ci := &protocol.ClientIntent{IntentID: "i-1", BasedOnSeq: 7, Intent: protocol.Call{PrintingID: "E-02", Slot: 1}}
	frame, err := protocol.EncodeClientFrame(ci)
	if err != nil {
		t.Fatal(err)
	}
	local, err := submittedIntent(&SubmitIntent{Intent: ci})
	if err != nil {
		t.Fatal(err)
	}
	if local != ci {
		t.Fatal("a local submission was not taken as it is")
	}

	sent := &SubmitIntent{Seat: 1, SessionID: "s", Intent: ci, SeenEpoch: 3}
	wire, err := envelope.Wrap(sent).Serialize()
	if err != nil {
		t.Fatalf("serialize: %v", err)
	}
	// The message as it was before it carried the value.
	type frameOnly struct {
		Seat      int
		SessionID string
		Frame     []byte
		SeenEpoch int64 `msgpack:",omitempty"`
	}
	withFrame, err := msgpack.Marshal(&frameOnly{Seat: 1, SessionID: "s", Frame: frame, SeenEpoch: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := wire.(*envelope.Envelope).Data; !bytes.Equal(got, withFrame) {
		t.Fatalf("on the wire % x, a sender with the frame sends % x", got, withFrame)
	}
	if sent.Frame != nil {
		t.Fatal("serializing changed the sender's message")
	}
	back, err := wire.Deserialize()
	if err != nil {
		t.Fatal(err)
	}
	got, ok := back.(*envelope.Msg).V.(*SubmitIntent)
	if !ok {
		t.Fatalf("received %T", back.(*envelope.Msg).V)
	}
	if !bytes.Equal(got.Frame, frame) || got.Intent != nil || got.Seat != 1 || got.SessionID != "s" || got.SeenEpoch != 3 {
		t.Fatalf("received %+v, want the canonical frame % x", got, frame)
	}
	remote, err := submittedIntent(got)
	if err != nil {
		t.Fatal(err)
	}
	if remote.IntentID != ci.IntentID || remote.BasedOnSeq != ci.BasedOnSeq || remote.Intent != ci.Intent {
		t.Fatalf("the frame decodes to %+v, the sender's value is %+v", remote, ci)
	}
	if _, err := submittedIntent(&SubmitIntent{Frame: []byte{0x92, 0x7f}}); err == nil {
		t.Fatal("garbage frame accepted")
	}
}
