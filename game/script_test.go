package game

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden outputs in testdata/ (scripts)")

// Scripted games in testdata/*.txt, in the data-driven style of etcd-raft:
// each block is a directive, a line "----", and the expected output up to a
// blank line. `go test ./game -run TestScripts -update` rewrites the outputs;
// without -update any difference fails. Directives:
//
//	new seed=N decks=S1,S2     start a match (output: its events)
//	p0 <intent> / p1 <intent>  a command in the syntax of formatIntent
//	bot seed=N [steps=K]       the deciders play K uniformly random legal
//	                           commands (Concede excluded), or to the end
//	finish loser=P reason=R    a server-decided end (R: conceded, timeout, absence)
//	view pN                    player N's view, rendered
//	legal pN                   player N's legal commands
//
// Events are printed with their seq; "[p0 only]" marks owner-only events and
// "[p1 sees count]" events redacted for the other player; a Decision shows
// the other player's copy.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runScriptFile(t, f)
		})
	}
}

type scriptBlock struct {
	comments  []string
	directive string
	want      []string
}

func parseScript(text string) ([]scriptBlock, error) {
	var blocks []scriptBlock
	var cur scriptBlock
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case cur.directive == "" && (strings.HasPrefix(l, "#") || strings.TrimSpace(l) == ""):
			if strings.TrimSpace(l) != "" {
				cur.comments = append(cur.comments, l)
			}
		case cur.directive == "":
			cur.directive = strings.TrimSpace(l)
			if i+1 >= len(lines) || lines[i+1] != "----" {
				return nil, fmt.Errorf("line %d: directive %q is not followed by ----", i+1, l)
			}
			i++
			for i+1 < len(lines) && lines[i+1] != "" {
				i++
				cur.want = append(cur.want, lines[i])
			}
			blocks = append(blocks, cur)
			cur = scriptBlock{}
		}
	}
	return blocks, nil
}

func runScriptFile(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseScript(string(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	s := &scriptRun{}
	var out strings.Builder
	for i := range blocks {
		b := &blocks[i]
		got, err := s.exec(b.directive)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, b.directive, err)
		}
		if len(got) == 0 {
			got = []string{"(nothing)"}
		}
		if !*update {
			if d := firstDiff(b.want, got); d != "" {
				t.Fatalf("%s: %q: output differs (run with -update if intended):\n%s", path, b.directive, d)
			}
		}
		for _, c := range b.comments {
			out.WriteString(c + "\n")
		}
		out.WriteString(b.directive + "\n----\n" + strings.Join(got, "\n") + "\n\n")
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func firstDiff(want, got []string) string {
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return fmt.Sprintf("line %d\nwant: %s\n got: %s", i+1, w, g)
		}
	}
	return ""
}

// scriptRun is the state of one script.
type scriptRun struct {
	e *Engine
}

func (s *scriptRun) exec(directive string) ([]string, error) {
	f := strings.Fields(directive)
	args := map[string]string{}
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		}
	}
	num := func(k string, def uint64) (uint64, error) {
		v, ok := args[k]
		if !ok {
			return def, nil
		}
		return strconv.ParseUint(v, 10, 64)
	}
	switch f[0] {
	case "new":
		seed, err := num("seed", 0)
		if err != nil {
			return nil, err
		}
		var lists [2][]string
		for p, id := range strings.Split(args["decks"], ",") {
			if p > 1 {
				return nil, errors.New("decks: two ids")
			}
			if lists[p], err = catalog.DeckList(catalog.DeckID(id)); err != nil {
				return nil, err
			}
		}
		e, envs, err := New(seed, lists)
		if err != nil {
			return nil, err
		}
		s.e = e
		return eventLines(envs), nil
	case "p0", "p1":
		if s.e == nil {
			return nil, errors.New("no match: use new first")
		}
		in, err := parseIntent(strings.TrimPrefix(directive, f[0]))
		if err != nil {
			return nil, err
		}
		envs, err := s.e.Execute(int(f[0][1]-'0'), in)
		if err != nil {
			var rej *Rejection
			if !errors.As(err, &rej) {
				return nil, err
			}
			return []string{fmt.Sprintf("rejected %s: %s", rejectName(rej.Code), rej.Reason)}, nil
		}
		return eventLines(envs), nil
	case "bot":
		seed, err := num("seed", 0)
		if err != nil {
			return nil, err
		}
		steps, err := num("steps", maxCommands)
		if err != nil {
			return nil, err
		}
		r := rand.New(rand.NewPCG(seed, 0xb07))
		var out []string
		for n := uint64(0); n < steps && !s.e.IsFinished(); n++ {
			d := s.e.Decider()
			l := s.e.LegalCommands(d)
			in := l[r.IntN(len(l)-1)]
			envs, err := s.e.Execute(d, in)
			if err != nil {
				return nil, fmt.Errorf("bot: %s: %w", formatIntent(in), err)
			}
			out = append(out, fmt.Sprintf("p%d %s", d, formatIntent(in)))
			out = append(out, eventLines(envs)...)
		}
		return out, nil
	case "finish":
		loser, err := strconv.Atoi(args["loser"])
		if err != nil {
			return nil, err
		}
		reason := map[string]protocol.FinishReason{"conceded": protocol.FinishConceded, "timeout": protocol.FinishTimeout,
			"absence": protocol.FinishAbsence}[args["reason"]]
		return eventLines(s.e.Finish(loser, reason)), nil
	case "view":
		return viewLines(s.e.View(int(f[1][1] - '0'))), nil
	case "legal":
		return []string{formatIntents(s.e.LegalCommands(int(f[1][1] - '0')))}, nil
	}
	return nil, fmt.Errorf("unknown directive %q", f[0])
}

func rejectName(c protocol.IntentRejectCode) string {
	switch c {
	case protocol.RejectIllegal:
		return "Illegal"
	case protocol.RejectNotYourTurn:
		return "NotYourTurn"
	case protocol.RejectMatchFinished:
		return "MatchFinished"
	}
	return strconv.Itoa(int(c))
}

func eventLines(envs []protocol.EventEnvelope) []string {
	out := make([]string, 0, len(envs))
	for _, env := range envs {
		l := fmt.Sprintf("  %4d %s", env.Seq, formatEvent(env.Event))
		if d, ok := env.Event.(*protocol.DecisionEvent); ok {
			if pd, _ := ProjectEvent(1-d.Player, d); d.Player >= 0 {
				l += fmt.Sprintf(" [p%d sees: %s]", 1-d.Player, formatEvent(pd))
			}
		} else if o := eventOwner(env.Event); o >= 0 {
			switch protocol.EventVisibility(env.Event.EventKind()) {
			case protocol.OwnerOnly:
				l += fmt.Sprintf(" [p%d only]", o)
			case protocol.Redacted:
				l += fmt.Sprintf(" [p%d sees count]", 1-o)
			}
		}
		out = append(out, l)
	}
	return out
}

func cardViewText(c *protocol.CardView) string {
	if c == nil {
		return "-"
	}
	if c.InstanceID == 0 {
		return "(face down)"
	}
	s := fmt.Sprintf("#%d %s %d", c.InstanceID, c.PrintingID, c.Power)
	if c.Critical != c.BaseCritical {
		s += fmt.Sprintf(" c%d", c.Critical)
	}
	if c.Rested {
		s += " rested"
	}
	return s
}

func cardViewsText(cs []protocol.CardView) string {
	s := make([]string, len(cs))
	for i := range cs {
		s[i] = cardViewText(&cs[i])
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// viewLines renders a view compactly.
func viewLines(v protocol.MatchView) []string {
	out := []string{fmt.Sprintf("seq=%d you=p%d active=%d turn=%d phase=%s/%s finished=%v winner=%d opponentChoosing=%v",
		v.EventSeq, v.You, v.ActivePlayer, v.TurnNumber, name(phaseNames[:], v.Phase), name(stepNames[:], v.Step),
		v.IsFinished, v.Winner, v.OpponentChoosing)}
	for _, p := range v.Players {
		out = append(out, fmt.Sprintf("p%d hand=%d deck=%d damage=%d+%d down defeated=%v", p.Index, p.HandCount, p.DeckCount,
			len(p.FaceUpDamage), p.FaceDownDamage, p.IsDefeated))
		if len(p.Hand) > 0 {
			out = append(out, "  hand "+cardViewsText(p.Hand))
		}
		rg := make([]string, 5)
		for i, c := range p.RearGuards {
			rg[i] = cardViewText(c)
		}
		out = append(out, "  vc "+cardViewText(p.Vanguard)+" | rc "+strings.Join(rg, " | "))
		out = append(out, "  soul "+cardViewsText(p.Soul)+" drop "+cardViewsText(p.Drop)+" damage "+cardViewsText(p.FaceUpDamage))
		if len(p.Guardian) > 0 || p.Trigger != nil {
			out = append(out, "  gc "+cardViewsText(p.Guardian)+" trigger "+cardViewText(p.Trigger))
		}
	}
	if b := v.Battle; b != nil {
		out = append(out, fmt.Sprintf("battle %d->%d boost=%s power %d vs %d+%d perfect=%v drive %d/%d",
			b.AttackerSlot, b.TargetSlot, optSlot(b.BoosterSlot), b.AttackerPower, b.TargetPower, b.ShieldTotal, b.PerfectGuard, b.DriveDone, b.DriveTotal))
	}
	if tr := v.Trigger; tr != nil {
		out = append(out, fmt.Sprintf("trigger p%d %s %s power%v effect%v", tr.Player, name(triggerNames[:], tr.Trigger), cardText(tr.Card), tr.PowerTargets, tr.EffectTargets))
	}
	if c := v.Choice; c != nil {
		out = append(out, fmt.Sprintf("choice %s %s %s %+v", cardText(c.Source), abilityName(c.AbilityKey), name(choiceNames[:], c.Kind), c.Options))
	}
	if a := v.Ability; a != nil {
		out = append(out, fmt.Sprintf("ability %s %s cost %+v", cardText(a.Source), abilityName(a.AbilityKey), a.Cost))
	}
	if o := v.Order; o != nil {
		out = append(out, fmt.Sprintf("order %+v", o.Entries))
	}
	out = append(out, "legal "+formatIntents(v.LegalIntents))
	return out
}
