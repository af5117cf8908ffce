package main

import (
	"runtime/debug"
	"strings"
)

// version names a release build; set it at link time:
//
//	go build -ldflags "-X main.version=1.4.2" ./cmd/matchd
//
// Empty, the module version stands in ("(devel)" for a build from a
// checkout).
var version string

// buildVersion names the build of this binary: version (or the module
// version), the commit when the build recorded one (with "+dirty" for
// uncommitted changes), and the Go release. Members report it to each other
// so matchctl cluster shows which members run which build.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	parts := []string{bi.Main.Version}
	if version != "" {
		parts[0] = version
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		parts = append(parts, "rev "+rev[:min(12, len(rev))]+dirty)
	}
	parts = append(parts, bi.GoVersion)
	return strings.Join(parts, " ")
}
