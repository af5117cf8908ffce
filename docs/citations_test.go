package docs

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The patterns are written so that this file does not match them itself.
var forbidden = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\b(PROTOCOL|RULES|PROTOACTOR|ARCHITECTURE|STYLE)\.md\b`), "a document outside the repository; cite docs/<name>.md"},
	{regexp.MustCompile(`\b(PROTOCOL|RULES|PROTOACTOR|ARCHITECTURE)\s+(§|D\d)`), "a document outside the repository; cite docs/<name>.md §N"},
	{regexp.MustCompile(`\.\./shared\b|\bshared/(spec|seeds)\b|/work/(shared|notes)\b`), "a folder outside the repository"},
	{regexp.MustCompile(`\bseeds?\s+§|\bseeds/0\d\d|\bseed\s+0\d\d\b`), "the project seed is not in the repository; cite docs/protocol.md"},
}

// citation is `docs/<name>.md` optionally followed by section references:
// "docs/protocol.md §4.2", "docs/protocol.md §5 and §9.9-§9.10",
// "`docs/rules.md` §6, §7.2", "docs/protocol.md §4.2/§9.8".
var citation = regexp.MustCompile("docs/([a-z0-9_-]+\\.md)`?((?:\\s*(?:,|/|-|–|and|or)?\\s*§\\s?\\d+(?:\\.\\d+)*)*)")

var sectionRef = regexp.MustCompile(`§\s?(\d+(?:\.\d+)*)`)

// mdLink is a relative Markdown link to another page: [text](x.md#anchor).
var mdLink = regexp.MustCompile(`\]\(([^)\s#:]+\.md)(?:#[^)]*)?\)`)

var (
	headingNum = regexp.MustCompile(`^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s`)
	listNum    = regexp.MustCompile(`^(\d+)\.\s`)
)

// sections returns the numbered sections of a Markdown page: every heading
// that starts with a number ("## 4. Handshake", "### 4.3 Order") and every
// unindented numbered list item under such a heading (item 3 under "## 9."
// is §9.3).
func sections(text string) map[string]bool {
	out := map[string]bool{}
	current := ""
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if strings.HasPrefix(line, "#") {
			current = ""
			if m := headingNum.FindStringSubmatch(line); m != nil {
				current = m[1]
				out[current] = true
			}
			continue
		}
		if m := listNum.FindStringSubmatch(line); m != nil && current != "" {
			out[current+"."+m[1]] = true
		}
	}
	return out
}

// textFile reports whether the repository file at path is text worth scanning.
func textFile(path string, b []byte) bool {
	if len(b) > 2<<20 {
		return false
	}
	head := b
	if len(head) > 8192 {
		head = head[:8192]
	}
	return !bytes.ContainsRune(head, 0)
}

type finding struct{ where, msg string }

// scan checks every text file under root and returns what is wrong.
func scan(t *testing.T, root string) []finding {
	t.Helper()
	docSections := map[string]map[string]bool{}
	pageSections := func(name string) (map[string]bool, bool) {
		if s, ok := docSections[name]; ok {
			return s, s != nil
		}
		b, err := os.ReadFile(filepath.Join(root, "docs", name))
		if err != nil {
			docSections[name] = nil
			return nil, false
		}
		docSections[name] = sections(string(b))
		return docSections[name], true
	}
	var out []finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") && name != ".ci" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || filepath.Base(path) == "citations_test.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !textFile(path, b) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		isDocPage := strings.HasPrefix(rel, "docs/") && strings.HasSuffix(rel, ".md") && !strings.Contains(rel[5:], "/")
		for i, line := range strings.Split(string(b), "\n") {
			where := fmt.Sprintf("%s:%d", rel, i+1)
			for _, f := range forbidden {
				if m := f.re.FindString(line); m != "" {
					out = append(out, finding{where, fmt.Sprintf("cites %q: %s", m, f.why)})
				}
			}
			covered := make([]bool, len(line))
			for _, m := range citation.FindAllStringSubmatchIndex(line, -1) {
				for k := m[0]; k < m[1]; k++ {
					covered[k] = true
				}
				page := line[m[2]:m[3]]
				secs, ok := pageSections(page)
				if !ok {
					out = append(out, finding{where, fmt.Sprintf("cites docs/%s, which does not exist", page)})
					continue
				}
				for _, s := range sectionRef.FindAllStringSubmatch(line[m[4]:m[5]], -1) {
					if !secs[s[1]] {
						out = append(out, finding{where, fmt.Sprintf("cites docs/%s §%s, which has no such numbered section", page, s[1])})
					}
				}
			}
			if strings.HasSuffix(rel, ".md") {
				for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
					target := filepath.Join(filepath.Dir(path), m[1])
					if _, err := os.Stat(target); err != nil {
						out = append(out, finding{where, fmt.Sprintf("links %s, which does not exist", m[1])})
					}
				}
			}
			if !isDocPage {
				continue
			}
			// On a docs page a bare "§N" refers to the page itself.
			self, _ := pageSections(rel[len("docs/"):])
			for _, m := range sectionRef.FindAllStringSubmatchIndex(line, -1) {
				if covered[m[0]] {
					continue
				}
				if s := line[m[2]:m[3]]; !self[s] {
					out = append(out, finding{where, fmt.Sprintf("cites §%s of this page, which has no such numbered section", s)})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out
}

// TestCitationsStayInsideTheRepository fails for every comment, page or
// script that cites a document the repository does not hold, or a numbered
// section that its page does not have.
func TestCitationsStayInsideTheRepository(t *testing.T) {
	for _, f := range scan(t, "..") {
		t.Errorf("%s: %s", f.where, f.msg)
	}
}

// TestCitationCheckerFails proves the checker catches each kind of bad
// citation, on a throwaway repository.
func TestCitationCheckerFails(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "docs"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "pkg"), 0o755))
	must(os.WriteFile(filepath.Join(root, "docs", "protocol.md"), []byte("# P\n\n## 4. Handshake\n1. hello\n2. more\n\n### 4.3 Order\n\nSee §4.2 and §7.\n"), 0o644))
	spec := "PROTOCOL" + ".md"
	must(os.WriteFile(filepath.Join(root, "pkg", "a.go"), []byte(strings.Join([]string{
		"package pkg",
		"// ok: docs/protocol.md §4.3, §4.1 and §4",
		"// bad: " + spec + " §2",
		"// bad section: docs/protocol.md §4.2/§9.8",
		"// bad page: docs/missing.md",
		"// bad folder: ../" + "shared/spec",
		"// bad seed: seed " + "§6",
		"",
	}, "\n")), 0o644))
	got := map[string]bool{}
	for _, f := range scan(t, root) {
		got[f.where+": "+f.msg] = true
	}
	want := []string{
		`docs/protocol.md:9: cites §7 of this page, which has no such numbered section`,
		`pkg/a.go:3: cites "` + spec + `": a document outside the repository; cite docs/<name>.md`,
		`pkg/a.go:4: cites docs/protocol.md §9.8, which has no such numbered section`,
		`pkg/a.go:5: cites docs/missing.md, which does not exist`,
		`pkg/a.go:6: cites "../shared": a folder outside the repository`,
		`pkg/a.go:7: cites "seed ` + "§" + `": the project seed is not in the repository; cite docs/protocol.md`,
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("missing finding %q", w)
		}
		delete(got, w)
	}
	for g := range got {
		t.Errorf("unexpected finding %q", g)
	}
}
