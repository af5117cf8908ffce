// Package docs holds the design documents of Matchgrain (architecture.md,
// protocol.md, rules.md, cluster.md, performance.md). It has no code; its tests
// keep the repository self-contained: every document a comment or a page
// cites must be in the repository, and every numbered section it cites
// (`docs/protocol.md §4.3`) must exist; and architecture.md's import list
// must be what go list says the packages import.
package docs
