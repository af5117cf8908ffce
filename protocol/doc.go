// Package protocol defines match protocol v1 on the wire: every client and
// server frame, intent, event and view as a Go type, the enums, and the
// MessagePack codec and TCP framing that turn them into bytes and back.
//
// The invariant the package keeps: any byte string a client can send decodes
// into one fixed schema or into a typed error, within bounded time and memory,
// and every value the server encodes is the canonical byte form published in
// testdata/vectors.json. It does not touch sockets, actors or clocks.
//
// Encoding rules (docs/protocol.md §3): a frame is a 2-element array
// [unionKey, body]; a body is an array whose element i is the field with key i;
// optional values are nil; enums are integers. Integers are written in their
// smallest MessagePack form. Decoders accept any integer width that fits,
// shorter arrays (missing fields are zero) and longer arrays (extra fields are
// skipped).
package protocol
