package actors

import (
	"context"
	"errors"
	"testing"
	"time"

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

type okRequester struct{}

func (okRequester) Request(ctx context.Context, _, _ string, _ any) (any, error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("request without a deadline")
	}
	return &Reply{Code: ReplyOK}, nil
}

// BenchmarkGatewayCall measures Gateway.call's own cost around a request
// that answers at once: with the caller's deadline, shorter or longer than
// RequestTimeout (the edge's default is 10 s, the gateway's 5 s), no second
// context and timer is made.
func BenchmarkGatewayCall(b *testing.B) {
	g := &Gateway{cfg: GatewayConfig{Cluster: okRequester{}, RequestTimeout: 5 * time.Second}}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{{"edge-deadline", 5 * time.Second}, {"longer-deadline", time.Minute}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
				if _, err := g.call(ctx, "m", &Wake{}); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
		})
	}
}
