package docs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/matchgrain/matchgrain/"

// goList runs go list in the module's root with args and returns its output.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// documentedImports reads the import list of docs/architecture.md §1: the
// indented block after "Imports point one way", one package a line, its
// imports after an arrow.
func documentedImports(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i := strings.Index(text, "Imports point one way")
	if i < 0 {
		t.Fatal("docs/architecture.md has no import list (\"Imports point one way\")")
	}
	out := map[string][]string{}
	inBlock := false
	for _, line := range strings.Split(text[i:], "\n") {
		if !strings.HasPrefix(line, "    ") {
			if inBlock {
				break
			}
			continue
		}
		inBlock = true
		pkg, deps, _ := strings.Cut(strings.TrimSpace(line), "→")
		pkg = strings.TrimSpace(pkg)
		if _, dup := out[pkg]; dup {
			t.Errorf("docs/architecture.md lists %s twice", pkg)
		}
		var list []string
		for _, d := range strings.Split(deps, ",") {
			if d = strings.TrimSpace(d); d != "" {
				list = append(list, d)
			}
		}
		out[pkg] = list
	}
	if len(out) == 0 {
		t.Fatal("docs/architecture.md: the import list is empty")
	}
	return out
}

// TestArchitectureImports: the import list of docs/architecture.md §1 is
// what go list says every package of the module imports from the module
// (test files aside), package by package.
func TestArchitectureImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	doc := documentedImports(t)
	code := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		var deps []string
		for _, imp := range fields[1:] {
			if d, ok := strings.CutPrefix(imp, module); ok {
				deps = append(deps, d)
			}
		}
		slices.Sort(deps)
		code[pkg] = deps
	}
	for pkg, deps := range code {
		listed, ok := doc[pkg]
		switch {
		case !ok:
			t.Errorf("package %s (imports %v) is missing from docs/architecture.md §1", pkg, deps)
		case !slices.Equal(slices.Sorted(slices.Values(listed)), deps):
			t.Errorf("docs/architecture.md §1: %s → %s; go list says → %s", pkg, strings.Join(listed, ", "), strings.Join(deps, ", "))
		}
	}
	for pkg := range doc {
		if _, ok := code[pkg]; !ok {
			t.Errorf("docs/architecture.md §1 lists %s, which is not a package of the module", pkg)
		}
	}
}

// TestClientWithoutEngine: the Go client and its bots read the card
// catalog and the bot policy without linking the rules engine.
func TestClientWithoutEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the client")
	}
	for _, dep := range strings.Fields(goList(t, "-deps", "./client/...")) {
		if dep == module+"game" {
			t.Fatalf("./client/... links %s, the rules engine; read cards from game/catalog", dep)
		}
	}
}
