// Package bots plays matches with random but purposeful bots over the real
// protocol: each bot keeps its whole view from events and picks among the
// legal intents of the Decision event that ends every batch (docs/protocol.md
// §13), reconnects and resumes; in verify mode it compares its view with a
// snapshot after every batch. Against a server without Decision events it
// falls back to a snapshot after every change. matchctl, matchd --demo and the end-to-end
// tests use it; it knows nothing of the server's internals.
package bots
