// Package web is the browser side of matchd, served on the edge's HTTP
// listener from assets embedded in the binary: the play page (a match
// against the server's bot or a friend, through the public play endpoints
// of package edge and the TypeScript client library), the ops console
// (behind the admin token) and its JSON API.
//
// The page sources are TypeScript under web/src, bundled by esbuild into
// web/dist, which is committed so that `go run ./cmd/matchd` works on a
// fresh clone without Node; `npm test` in web/ fails when dist is stale.
// The page shows only what the protocol sends to its seat: hidden
// information stays hidden in the page as on the wire.
package web
