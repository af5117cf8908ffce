package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"

	tsclient "github.com/matchgrain/matchgrain/clients/ts"
	"github.com/matchgrain/matchgrain/game/catalog"
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
		case "/matchgrain-client.js":
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write(tsclient.BrowserBundle) // the client may have gone
		case "/cards.json":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "max-age=300")
			_, _ = w.Write(cards) // the client may have gone
		default:
			files.ServeHTTP(w, r)
		}
	})
}

// card is what the page shows of a printing.
type card struct {
	Name     string `json:"name"`
	Grade    int    `json:"grade"`
	Power    int    `json:"power"`
	Shield   int    `json:"shield"`
	Trigger  int    `json:"trigger"`
	Sentinel bool   `json:"sentinel,omitempty"`
}

func cardCatalog() []byte {
	m := map[string]card{}
	for _, p := range catalog.Printings() {
		m[p.ID] = card{Name: p.Name, Grade: p.Grade, Power: p.Power, Shield: p.Shield, Trigger: int(p.Trigger), Sentinel: p.Sentinel}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // plain structs always marshal
	}
	return b
}
