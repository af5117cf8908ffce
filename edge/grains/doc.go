// Package grains connects the edge to the match grains: it adapts
// actors.Gateway to edge.Matches, translating sentinel errors and detach
// reasons. It lives apart from package edge so that the edge itself stays
// free of protoactor and can be tested against any Matches.
package grains
