package protocol

// UnknownEvent stands for an event whose key this version does not know. It
// only comes out of decoding server frames (and DecodeEvent): a newer server
// may append events, and an older client skips them instead of failing. Its
// body is skipped and lost; encoding it writes [Key, []].
type UnknownEvent struct {
	Key EventKind
}

// EventKind implements Event.
func (e *UnknownEvent) EventKind() EventKind { return e.Key }

// UnknownIntent stands for an intent whose key this version does not know,
// inside a server frame (MatchView.legalIntents) only. Client frames never
// decode to it: an unknown intent in a ClientIntent is an *UnknownIntentError.
// Encoding it writes [Key, []].
type UnknownIntent struct {
	Key IntentKind
}

// IntentKind implements Intent.
func (u UnknownIntent) IntentKind() IntentKind { return u.Key }
