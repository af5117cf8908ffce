package deploy

import (
	"os"
	"os/exec"
	"testing"
)

// inCI reports whether the suite runs in CI (.ci/run exports CI), where a
// missing tool means a broken CI machine, not a reason to check less.
func inCI() bool { return os.Getenv("CI") != "" }

// haveTool reports whether the command name is installed. Without it the
// test logs what it leaves unchecked, or fails in CI.
func haveTool(t *testing.T, name, unchecked string) bool {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return true
	}
	if inCI() {
		t.Fatalf("%s is not installed, so %s (CI must install it: .ci/run)", name, unchecked)
	}
	t.Logf("no %s: %s", name, unchecked)
	return false
}
