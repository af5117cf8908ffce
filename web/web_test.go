package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/web"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// TestHandlerServesEmbeddedPages: the built pages are in the binary, with
// headers that keep them to their own origin.
func TestHandlerServesEmbeddedPages(t *testing.T) {
	h := web.Handler()
	for _, c := range []struct{ path, ctype, contains string }{
		{"/", "text/html", `src="/play.js"`},
		{"/console", "text/html", `src="/console.js"`},
		{"/play.js", "javascript", `from "/matchgrain-client.js"`},
		{"/matchgrain-client.js", "javascript", "Session = class"},
		{"/console.js", "javascript", "/api/admin/matches"},
		{"/style.css", "text/css", ".card"},
		{"/cards.json", "application/json", `"name"`},
	} {
		res, body := get(t, h, "GET", c.path, nil)
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Type"), c.ctype) || !strings.Contains(body, c.contains) {
			t.Fatalf("%s: %d %q, body has %q: %v", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.contains, strings.Contains(body, c.contains))
		}
		if !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("%s: CSP %q", c.path, res.Header.Get("Content-Security-Policy"))
		}
	}
	var cards map[string]struct{ Name string }
	_, body := get(t, h, "GET", "/cards.json", nil)
	if err := json.Unmarshal([]byte(body), &cards); err != nil || len(cards) < 10 {
		t.Fatalf("cards.json: %d cards, %v", len(cards), err)
	}
	if res, _ := get(t, h, "POST", "/", nil); res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /: %d", res.StatusCode)
	}
	if res, _ := get(t, h, "GET", "/nothing-here", nil); res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /nothing-here: %d", res.StatusCode)
	}
}

// TestCardsExplainThemselves: /cards.json gives every printing its skill and
// every printing with an ability (or the sentinel keyword) its text, so the
// page can explain any card it draws.
func TestCardsExplainThemselves(t *testing.T) {
	_, body := get(t, web.Handler(), "GET", "/cards.json", nil)
	var cards map[string]struct {
		Name, Skill, Ability string
		Shield               int
	}
	if err := json.Unmarshal([]byte(body), &cards); err != nil {
		t.Fatal(err)
	}
	for _, p := range catalog.Printings() {
		c, ok := cards[p.ID]
		switch {
		case !ok:
			t.Errorf("%s missing from /cards.json", p.ID)
		case c.Skill == "":
			t.Errorf("%s (%s): no skill text", p.ID, c.Name)
		case (p.Ability != nil || p.Sentinel) && c.Ability == "":
			t.Errorf("%s (%s): has an ability but no text", p.ID, c.Name)
		case p.Ability == nil && !p.Sentinel && c.Ability != "":
			t.Errorf("%s (%s): vanilla but has text %q", p.ID, c.Name, c.Ability)
		}
	}
	if res, body := get(t, web.Handler(), "GET", "/favicon.ico", nil); res.StatusCode != 200 || !strings.Contains(body, "<svg") {
		t.Fatalf("/favicon.ico: %d", res.StatusCode)
	}
}
