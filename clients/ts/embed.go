// Package tsclient embeds the browser build of the TypeScript client
// (dist/matchgrain-client.js), so that a Go server can serve it as is: the
// web client (package web) loads it at /matchgrain-client.js instead of
// inlining a copy that would go stale whenever the library changes.
package tsclient

import _ "embed"

// BrowserBundle is dist/matchgrain-client.js: the whole library as one ES
// module. The library's `npm test` fails when it is stale.
//
//go:embed dist/matchgrain-client.js
var BrowserBundle []byte
