// Package ops is the operations API of a matchd node: every endpoint under
// /api/admin/ that matchctl and the ops console read (the cluster's members,
// live matches, one match's row and state, a replay). It only reads: nothing
// here claims, writes or stops a match.
//
// Authorization is not this package's business: the edge mounts Handler
// (edge.Config.Admin) behind the same bearer check as every other admin route
// (current and previous tokens, one header parser), and errors have the
// edge's JSON shape ({"error": code, "message": text}, edge.WriteError).
package ops
