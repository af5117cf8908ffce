package protocol

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The key tables in docs/protocol.md are generated from the Go code (the
// union samples, reflection over the types, and the constant declarations
// read with go/types), so they cannot drift: TestDocsTables fails when the
// committed text differs, and -update rewrites it.

const (
	docsPath   = "../docs/protocol.md"
	beginMark  = "<!-- BEGIN GENERATED: go test ./protocol -run TestDocsTables -update -->"
	endMark    = "<!-- END GENERATED -->"
	typesFiles = "enums.go intents.go events.go frames.go views.go"
)

// declaredConst is one constant from the type files.
type declaredConst struct {
	name  string
	typ   string // named type, or "" for untyped
	value int64
	doc   string
}

// declaredConsts type-checks the files the lead owns and returns their
// exported constants in declaration order, with their doc comments.
func declaredConsts(t *testing.T) []declaredConst {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range strings.Fields(typesFiles) {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		files = append(files, f)
	}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("protocol", fset, files, nil)
	if err != nil {
		t.Fatalf("type-check %s: %v", typesFiles, err)
	}
	var out []declaredConst
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				text := vs.Doc.Text()
				if text == "" {
					text = vs.Comment.Text()
				}
				if text == "" {
					// A constant in a documented block shares the block's comment.
					text = gd.Doc.Text()
				}
				for _, n := range vs.Names {
					c, ok := pkg.Scope().Lookup(n.Name).(*types.Const)
					if !ok || !c.Exported() {
						continue
					}
					v, exact := constant.Int64Val(c.Val())
					if !exact {
						t.Fatalf("constant %s is not an integer", n.Name)
					}
					typ := ""
					if named, ok := c.Type().(*types.Named); ok {
						typ = named.Obj().Name()
					}
					out = append(out, declaredConst{name: n.Name, typ: typ, value: v, doc: strings.Join(strings.Fields(text), " ")})
				}
			}
		}
	}
	return out
}

// enumSpec says how an enum type's constants are named and printed.
type enumSpec struct {
	prefix, suffix string
	str            func(int) string
	count          int
}

var enumSpecs = map[string]enumSpec{
	"Phase":            {"Phase", "", func(v int) string { return Phase(v).String() }, len(phaseNames)},
	"Step":             {"Step", "", func(v int) string { return Step(v).String() }, len(stepNames)},
	"Zone":             {"Zone", "", func(v int) string { return Zone(v).String() }, len(zoneNames)},
	"TriggerType":      {"Trigger", "", func(v int) string { return TriggerType(v).String() }, len(triggerNames)},
	"CheckKind":        {"Check", "", func(v int) string { return CheckKind(v).String() }, len(checkKindNames)},
	"AbilityKey":       {"Ability", "", func(v int) string { return AbilityKey(v).String() }, len(abilityKeyNames)},
	"AbilityOutcome":   {"Outcome", "", func(v int) string { return AbilityOutcome(v).String() }, len(outcomeNames)},
	"ChoiceKind":       {"Choice", "", func(v int) string { return ChoiceKind(v).String() }, len(choiceKindNames)},
	"SoulOp":           {"Soul", "", func(v int) string { return SoulOp(v).String() }, len(soulOpNames)},
	"SoulCause":        {"SoulCause", "", func(v int) string { return SoulCause(v).String() }, len(soulCauseNames)},
	"RetireCause":      {"Retire", "", func(v int) string { return RetireCause(v).String() }, len(retireCauseNames)},
	"DiscardCause":     {"Discard", "", func(v int) string { return DiscardCause(v).String() }, len(discardCauseNames)},
	"FinishReason":     {"Finish", "", func(v int) string { return FinishReason(v).String() }, len(finishReasonNames)},
	"IntentRejectCode": {"Reject", "", func(v int) string { return IntentRejectCode(v).String() }, len(rejectCodeNames)},
	"ErrorCode":        {"Error", "", func(v int) string { return ErrorCode(v).String() }, len(errorCodeNames)},
	"IntentKind":       {"Intent", "", func(v int) string { return IntentKind(v).String() }, len(intentKindNames)},
	"EventKind":        {"Event", "", func(v int) string { return EventKind(v).String() }, len(eventKindNames)},
	"ClientFrameKind":  {"", "Kind", func(v int) string { return ClientFrameKind(v).String() }, len(clientFrameNames)},
	"ServerFrameKind":  {"", "Kind", func(v int) string { return ServerFrameKind(v).String() }, len(serverFrameNames)},
	"Visibility":       {"", "", func(v int) string { return Visibility(v).String() }, len(visibilityNames)},
}

// visibilityLetters maps the Visibility constants to their letters in docs/rules.md §10.
var visibilityLetters = map[string]string{"Public": "P", "Redacted": "R", "OwnerOnly": "O"}

// TestEnumNamesMatchDeclarations checks names.go against the constants: every
// declared value has its name, every name has a constant, values are dense
// from 0, and the kind counts match.
func TestEnumNamesMatchDeclarations(t *testing.T) {
	seen := map[string][]int64{}
	for _, c := range declaredConsts(t) {
		if c.typ == "" {
			continue
		}
		spec, ok := enumSpecs[c.typ]
		if !ok {
			t.Errorf("enum type %s (constant %s) has no String table in names.go", c.typ, c.name)
			continue
		}
		want := strings.TrimSuffix(strings.TrimPrefix(c.name, spec.prefix), spec.suffix)
		if c.typ == "Visibility" {
			want = visibilityLetters[c.name]
		}
		if got := spec.str(int(c.value)); got != want {
			t.Errorf("%s(%d).String() = %q, constant %s wants %q", c.typ, c.value, got, c.name, want)
		}
		seen[c.typ] = append(seen[c.typ], c.value)
	}
	for typ, spec := range enumSpecs {
		vals := seen[typ]
		slices.Sort(vals)
		for i, v := range vals {
			if v != int64(i) {
				t.Errorf("%s values are not 0..n-1: %v", typ, vals)
				break
			}
		}
		if len(vals) != spec.count {
			t.Errorf("%s: %d constants, %d names", typ, len(vals), spec.count)
		}
	}
	if len(seen["IntentKind"]) != intentKindCount || len(seen["EventKind"]) != eventKindCount {
		t.Errorf("intentKindCount/eventKindCount do not match the declared keys")
	}
}

// docType renders a Go field type as the docs spell it.
func docType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		// Escaped: a bare | would split the markdown table cell.
		return docType(t.Elem()) + "\\|nil"
	case reflect.Slice:
		return "[]" + docElem(t.Elem())
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), docElem(t.Elem()))
	}
	return t.Name()
}

func docElem(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		return "(" + docType(t) + ")"
	}
	return docType(t)
}

func docFields(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.NumField() == 0 {
		return "— (empty array)"
	}
	var parts []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		parts = append(parts, fmt.Sprintf("%d `%s` %s", i, wireName(f.Name), docType(f.Type)))
	}
	return strings.Join(parts, "; ")
}

// dtoTypes lists the struct types reachable from the union bodies, in the
// order first met, excluding the union members themselves.
func dtoTypes() []reflect.Type {
	members := map[reflect.Type]bool{}
	var roots []reflect.Type
	for _, f := range sampleClientFrames() {
		roots = append(roots, reflect.TypeOf(f).Elem())
	}
	for _, f := range sampleServerFrames() {
		roots = append(roots, reflect.TypeOf(f).Elem())
	}
	for _, it := range sampleIntents() {
		roots = append(roots, reflect.TypeOf(it))
	}
	for _, ev := range sampleEvents() {
		roots = append(roots, reflect.TypeOf(ev).Elem())
	}
	for _, r := range roots {
		members[r] = true
	}
	var out []reflect.Type
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		if !members[t] {
			out = append(out, t)
		}
		for i := 0; i < t.NumField(); i++ {
			walk(t.Field(i).Type)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}

func generateDocsTables(t *testing.T) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("### Client → server frames\n\n| key | frame | body fields (key, wire name, type) |\n|---|---|---|\n")
	for _, f := range sampleClientFrames() {
		w("| %d | %s | %s |\n", f.ClientFrameKind(), f.ClientFrameKind(), docFields(reflect.TypeOf(f)))
	}
	w("\nAn unknown client frame key is `MalformedFrame`.\n")

	w("\n### Server → client frames\n\n| key | frame | body fields (key, wire name, type) |\n|---|---|---|\n")
	for _, f := range sampleServerFrames() {
		w("| %d | %s | %s |\n", f.ServerFrameKind(), f.ServerFrameKind(), docFields(reflect.TypeOf(f)))
	}
	w("\nAn unknown server frame key is `MalformedFrame` for the client decoder too.\n")

	w("\n### Intents (`Intent` = `[intentKey, body]`)\n\n| key | intent | body fields |\n|---|---|---|\n")
	for _, it := range sampleIntents() {
		w("| %d | %s | %s |\n", it.IntentKind(), it.IntentKind(), docFields(reflect.TypeOf(it)))
	}
	w("\nAn unknown intent key inside a `ClientIntent` is `NotSupported` (not fatal).\n")

	w("\n### Events (`Event` = `[eventKey, body]`, inside `EventEnvelope` = `[seq, event]`)\n\n")
	w("Visibility: **P** public; **R** public, redacted for the opponent (`CardsDrawn`, `ReturnedToDeck`: `count` only, `cards` empty; `Decision`: see §13); **O** owner only (the opponent sees a seq gap).\n\n")
	w("| key | event | vis | body fields |\n|---|---|---|---|\n")
	for _, ev := range sampleEvents() {
		w("| %d | %s | %s | %s |\n", ev.EventKind(), ev.EventKind(), EventVisibility(ev.EventKind()), docFields(reflect.TypeOf(ev)))
	}
	w("\nAn unknown event key is skipped by the client decoder (`*UnknownEvent`).\n")

	w("\n### Bodies of the other DTOs\n\n| type | fields (key, wire name, type) |\n|---|---|\n")
	for _, dt := range dtoTypes() {
		w("| %s | %s |\n", dt.Name(), docFields(dt))
	}

	consts := declaredConsts(t)
	w("\n### Enums (integers on the wire)\n\n| enum | values |\n|---|---|\n")
	var enumOrder []string
	byEnum := map[string][]declaredConst{}
	for _, c := range consts {
		if c.typ == "" || c.typ == "Visibility" || strings.HasSuffix(c.typ, "Kind") && c.typ != "CheckKind" && c.typ != "ChoiceKind" {
			continue
		}
		if _, ok := byEnum[c.typ]; !ok {
			enumOrder = append(enumOrder, c.typ)
		}
		byEnum[c.typ] = append(byEnum[c.typ], c)
	}
	for _, typ := range enumOrder {
		var parts []string
		for _, c := range byEnum[typ] {
			parts = append(parts, fmt.Sprintf("%d %s", c.value, enumSpecs[typ].str(int(c.value))))
		}
		w("| %s | %s |\n", typ, strings.Join(parts, ", "))
	}

	w("\n### Constants\n\n| constant | value | meaning |\n|---|---|---|\n")
	for _, c := range consts {
		if c.typ != "" {
			continue
		}
		w("| `%s` | %d | %s |\n", c.name, c.value, c.doc)
	}
	return b.String()
}

func TestDocsTables(t *testing.T) {
	gen := generateDocsTables(t)
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatalf("read %s: %v", docsPath, err)
	}
	doc := string(data)
	i, j := strings.Index(doc, beginMark), strings.Index(doc, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q ... %q markers", docsPath, beginMark, endMark)
	}
	current := doc[i+len(beginMark) : j]
	want := "\n\n" + gen + "\n"
	if current == want {
		return
	}
	if !*update {
		t.Fatalf("%s: generated tables are stale; run go test ./protocol -run TestDocsTables -update", docsPath)
	}
	doc = doc[:i+len(beginMark)] + want + doc[j:]
	if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}
