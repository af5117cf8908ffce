// Package grains is the edge's side of the conversation with the match
// grains: the Gateway creates matches and attaches connections to seats
// (keep-alives, re-attaches after a grain moved, the seat's PID that takes
// a grain's pushes), and Matches adapts it to edge.Matches, translating
// sentinel errors and detach reasons. It lives apart from package edge so
// that the edge itself stays free of protoactor and can be tested against
// any Matches, and apart from package actors so that the grain's package
// holds the grain alone.
package grains
