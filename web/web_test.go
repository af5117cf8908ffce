package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
