package clustertest

import (
	"strings"
)

// EnvStrictRace, set to "1" in the parent's environment, makes a child's data
// race fail the test even when it lies entirely inside dependencies.
const EnvStrictRace = "CLUSTERTEST_STRICT_RACE"

// modulePath identifies this module's frames in race reports.
const modulePath = "github.com/matchgrain/matchgrain/"

// raceScanner classifies the race reports in a child's stderr. A report is
// this module's when, in any of its memory-access stacks, the innermost
// non-standard-library frame belongs to this module (a map written by our
// code shows runtime.mapassign first, then our function). Races whose
// accesses all happen inside dependencies are counted apart: protoactor-go at
// the pinned version has many (BlockList, gossip state, MemberList reads
// without its lock) that no caller can avoid.
type raceScanner struct {
	ours       []string // first line of each own report's access summary
	thirdParty int

	inReport  bool
	inAccess  bool // after an access header, before its first non-stdlib frame
	ownReport bool
	summary   []string
	report    []string // lines of the report being read
}

// line consumes one stderr line and returns the lines worth keeping: other
// output as is, a report of this module's in full once it ends, and a
// dependency-only report as a one-line summary (they are many and long).
func (r *raceScanner) line(l string) []string {
	t := strings.TrimSpace(l)
	switch {
	case t == "WARNING: DATA RACE":
		r.inReport, r.inAccess, r.ownReport, r.summary = true, false, false, nil
		r.report = []string{l}
		return nil
	case !r.inReport:
		if t == "==================" {
			return nil // the separator before a report
		}
		return []string{l}
	case t == "==================":
		r.inReport = false
		if r.ownReport {
			r.ours = append(r.ours, strings.Join(r.summary, " / "))
			return append(r.report, l)
		}
		r.thirdParty++
		return []string{"clustertest: data race inside dependencies: " + strings.Join(r.summary, " / ")}
	}
	r.report = append(r.report, l)
	r.scanFrame(t)
	return nil
}

// scanFrame records the innermost non-stdlib frame of each access stack.
func (r *raceScanner) scanFrame(t string) {
	if isAccessHeader(t) {
		r.inAccess = true
		return
	}
	if !r.inAccess || t == "" || strings.HasPrefix(t, "/") {
		if t == "" {
			r.inAccess = false
		}
		return
	}
	// A function frame inside an access stack.
	fn := t
	if i := strings.LastIndex(fn, "("); i > 0 {
		fn = fn[:i]
	}
	if isStdlib(fn) {
		return
	}
	r.inAccess = false
	r.summary = append(r.summary, fn)
	if strings.HasPrefix(fn, modulePath) {
		r.ownReport = true
	}
}

func isAccessHeader(t string) bool {
	for _, p := range []string{"Read at ", "Write at ", "Previous read at ", "Previous write at ",
		"Atomic read at ", "Atomic write at ", "Previous atomic read at ", "Previous atomic write at "} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// isStdlib reports whether a frame's function belongs to the standard
// library (its import path has no dot in the first element).
func isStdlib(fn string) bool {
	fn, _, _ = strings.Cut(fn, "[") // generic shapes may hold other paths
	var path string
	dir, last := "", fn
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		dir, last = fn[:i+1], fn[i+1:]
	}
	pkg, _, _ := strings.Cut(last, ".")
	path = dir + pkg
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
