// Package envelope carries registered Go values across protoactor remote inside
// one protobuf message, and guarantees that no inbound envelope, however
// malformed, ever makes the receiving endpoint fail: an unknown or undecodable
// payload arrives as a *Msg holding an *Unknown instead of an error.
//
// protoactor remote only transports protobuf messages (docs/cluster.md §4.2): a
// plain Go struct sent to a remote PID is dropped, and an error returned while
// decoding an inbound message closes the whole stream from that sender. This
// package plugs into the one supported hook, remote.RootSerializable /
// remote.RootSerialized:
//
//	envelope.Register("counter.Inc", func() any { return new(Inc) }) // in init
//	ctx.Request(pid, envelope.Wrap(&Inc{By: 1}))                       // sender
//	switch m := ctx.Message().(type) {                                 // receiver
//	case *envelope.Msg:
//		switch v := m.V.(type) {
//		case *Inc:      // ...
//		case *envelope.Unknown: // ignore; already logged
//		}
//	}
//
// On the wire a *Msg becomes an *Envelope{type, data} where data is the
// MessagePack encoding (vmihailenco/msgpack/v5, struct fields keyed by name) of
// the value; the receiving process decodes it back into a fresh value of the
// registered type, so both sides must link the same registrations.
//
// A request's Msg may carry its Deadline, when its sender stops waiting for
// the answer (cluster.Node.Request sets it per attempt to another member);
// it crosses the wire as the Envelope's third field, and Msg.Expired is the
// receiver's check, with an allowance for the members' clock skew.
//
// Local delivery (sender and receiver in the same actor system) does not
// serialize at all: the receiver gets the very *Msg and value the sender
// passed. Never mutate a message, or anything it points to, after sending it.
package envelope

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative envelope.proto
