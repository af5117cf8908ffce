package actors

import (
	"testing"

	"github.com/matchgrain/matchgrain/protocol"
)

// BenchmarkSubmittedIntent compares what the grain spends to get a
// submitted intent: decoding Frame (a remote edge, a bot) against taking the
// value a local Seat passed along (SubmitIntent.Decoded).
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
		{"local", &SubmitIntent{Frame: frame, Decoded: ci}},
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

// TestSubmittedIntentDecodedMatchesFrame checks that the value a local Seat
// passes is the one the frame decodes to, so that a local and a remote grain
// execute the same intent.
func TestSubmittedIntentDecodedMatchesFrame(t *testing.T) {
	ci := &protocol.ClientIntent{IntentID: "i-1", BasedOnSeq: 7, Intent: protocol.Call{PrintingID: "E-02", Slot: 1}}
	frame, err := protocol.EncodeClientFrame(ci)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := submittedIntent(&SubmitIntent{Frame: frame})
	if err != nil {
		t.Fatal(err)
	}
	local, err := submittedIntent(&SubmitIntent{Frame: frame, Decoded: ci})
	if err != nil {
		t.Fatal(err)
	}
	if local != ci {
		t.Fatal("local delivery decoded the frame again")
	}
	if remote.IntentID != local.IntentID || remote.BasedOnSeq != local.BasedOnSeq || remote.Intent != local.Intent {
		t.Fatalf("frame decodes to %+v, local value is %+v", remote, local)
	}
	if _, err := submittedIntent(&SubmitIntent{Frame: []byte{0x92, 0x7f}}); err == nil {
		t.Fatal("garbage frame accepted")
	}
}
