// Package edgetest provides test doubles for code that talks to an edge
// server, in the manner of net/http/httptest: Matches, an in-memory
// edge.Matches running a toy game that keeps the match grain's contract
// towards the edge, and Start, which runs a real edge.Server on random
// 127.0.0.1 ports for the length of a test.
//
// The invariant Matches keeps is the one the edge relies on: per seat, the
// frames delivered form one ordered stream (hello, then snapshot or events,
// then results, events and clocks) whose event sequence has no gap and no
// repeat, and a ticket opens a seat at most once.
//
// It is for tests only: nothing is persisted and the toy game is not the
// game of docs/rules.md.
package edgetest
