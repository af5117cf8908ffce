// Package clusterkeys keeps what every member of a cluster must agree on
// and where it comes from: the admin token, the ticket-signing keys (shared
// through the database and rotated there), and the cluster's identity, which
// stops a member of another cluster from starting on this cluster's
// database. An explicit setting always wins; with PostgreSQL the first
// member to start creates each secret and the others read it; an embedded
// single node keeps its ticket keys in its store and its generated admin
// token in a file only its owner can read. Secrets are never printed or logged: callers are told where an
// operator finds them (Secrets.AdminTokenAt).
package clusterkeys
