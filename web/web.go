package web

import (
	"embed"
	"io/fs"
	"net/http"

	tsclient "github.com/matchgrain/matchgrain/clients/ts"
)

//go:embed dist
var dist embed.FS

// securityHeaders are set on every page and asset: the pages load only
// their own scripts and talk only to their own origin.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// Assets returns the embedded, built page assets (index.html, console.html
// and their bundles).
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	return sub
}

// Handler serves the play page at /, the ops console page at /console, the
// spectator page at /watch (docs/protocol.md §14), the replay viewer at
// /replay (§15), the
// bundles, and /cards.json (the public card catalog, so the page can name
// cards). The console's data comes from the operations API (package ops, /api/admin/), which needs the token.
func Handler() http.Handler {
	assets := Assets()
	files := http.FileServerFS(assets)
	cards := cardCatalog()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case "/console", "/console/":
			http.ServeFileFS(w, r, assets, "console.html")
		case "/watch", "/watch/":
			http.ServeFileFS(w, r, assets, "watch.html")
		case "/replay", "/replay/":
			http.ServeFileFS(w, r, assets, "replay.html")
		case "/matchgrain-client.js":
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write(tsclient.BrowserBundle) // the client may have gone
		case "/favicon.ico":
			// Browsers ask for it whatever the page links.
			w.Header().Set("Content-Type", "image/svg+xml")
			w.Header().Set("Cache-Control", "max-age=86400")
			http.ServeFileFS(w, r, assets, "favicon.svg")
		case "/cards.json":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "max-age=300")
			_, _ = w.Write(cards) // the client may have gone
		default:
			files.ServeHTTP(w, r)
		}
	})
}
