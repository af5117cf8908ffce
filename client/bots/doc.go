// Package bots plays matches with random but purposeful bots over the real
// protocol: each bot picks among the legal intents of its snapshots, keeps a
// local view from events, reconnects and resumes, and at the end checks its
// view against a fresh snapshot. matchctl, matchd --demo and the end-to-end
// tests use it; it knows nothing of the server's internals.
package bots
