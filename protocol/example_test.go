package protocol_test

import (
	"errors"
	"fmt"

	"github.com/matchgrain/matchgrain/protocol"
)

// How the edge answers whatever a client sends.
func ExampleDecodeClientFrame() {
	inputs := [][]byte{
		// ClientIntent{intentId "a1", basedOnSeq 7, EndTurn}
		{0x92, 0x01, 0x93, 0xa2, 'a', '1', 0x07, 0x92, 0x10, 0x90},
		// The same with intent key 30, unknown to this version.
		{0x92, 0x01, 0x93, 0xa2, 'a', '1', 0x07, 0x92, 0x1e, 0x90},
		// A str32 header claiming 4 GiB for the ticket.
		{0x92, 0x00, 0x94, 0x01, 0xdb, 0xff, 0xff, 0xff, 0xff},
	}
	for _, b := range inputs {
		f, err := protocol.DecodeClientFrame(b)
		switch {
		case errors.Is(err, protocol.ErrUnknownIntent):
			ci := f.(*protocol.ClientIntent)
			fmt.Printf("ServerIntentResult{%s, %v}\n", ci.IntentID, protocol.RejectNotSupported)
		case err != nil: // ErrMalformed or ErrFrameTooLarge
			fmt.Printf("ServerError{%v, fatal}, close %d\n", protocol.ErrorMalformedFrame, protocol.CloseProtocolViolation)
		default:
			fmt.Printf("%T %T\n", f, f.(*protocol.ClientIntent).Intent)
		}
	}
	// Output:
	// *protocol.ClientIntent protocol.EndTurn
	// ServerIntentResult{a1, NotSupported}
	// ServerError{MalformedFrame, fatal}, close 4400
}
