package protocol

import (
	"errors"
	"fmt"
)

// Sentinel errors. Decoding errors wrap exactly one of ErrFrameTooLarge,
// ErrMalformed or ErrUnknownIntent, so errors.Is tells the edge how to answer:
//
//	ErrUnknownIntent → ServerIntentResult{Code: RejectNotSupported} with the intentId; the connection stays.
//	ErrFrameTooLarge → ServerError{Code: ErrorMalformedFrame, Fatal: true}, close 4400.
//	ErrMalformed     → ServerError{Code: ErrorMalformedFrame, Fatal: true}, close 4400.
//
// ErrStringLimit is always wrapped together with ErrMalformed; it only adds
// detail for logs and tests.
var (
	// ErrFrameTooLarge: a frame is longer than MaxFrameBytes (or the
	// FrameReader's limit). It is returned before any byte is decoded.
	ErrFrameTooLarge = errors.New("protocol: frame too large")
	// ErrMalformed: the bytes are not a frame of this protocol: garbage, a wrong
	// type, a nil non-optional field, an unknown frame key, a limit exceeded
	// (depth, array length, string length), or trailing bytes.
	ErrMalformed = errors.New("protocol: malformed frame")
	// ErrUnknownIntent: a well-formed ClientIntent whose intent key this
	// version does not know. DecodeClientFrame returns the partially decoded
	// *ClientIntent (IntentID, BasedOnSeq; Intent nil) with an
	// *UnknownIntentError that wraps this sentinel.
	ErrUnknownIntent = errors.New("protocol: unknown intent")
	// ErrStringLimit: a string field is shorter or longer than its limit
	// (intentId 1..MaxIntentIDLen, ticket, clientBuild, reason, printing ids).
	// It comes wrapped with ErrMalformed.
	ErrStringLimit = errors.New("string length out of range")
	// ErrInvalidValue: an encoder was given a value it cannot put on the wire:
	// a nil frame, intent or event, an unknown union member, or an array over
	// MaxArrayLen. It is a programming error on the sending side.
	ErrInvalidValue = errors.New("protocol: value cannot be encoded")
)

// UnknownIntentError reports a ClientIntent with an intent key this version
// does not know. It wraps ErrUnknownIntent. The frame around it was well
// formed, so the connection can stay open.
type UnknownIntentError struct {
	// IntentID is the intentId of the frame, for the NotSupported answer.
	IntentID string
	// Key is the unknown intent key as sent.
	Key int64
}

// Error implements error. It leaves out the intent id, which is client data.
func (e *UnknownIntentError) Error() string {
	return fmt.Sprintf("%v: key %d", ErrUnknownIntent, e.Key)
}

// Unwrap lets errors.Is(err, ErrUnknownIntent) hold.
func (e *UnknownIntentError) Unwrap() error { return ErrUnknownIntent }
