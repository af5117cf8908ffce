package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A perf trace of flushes as trace-fsync.sh records it: calls printed whole,
// a call whose end came on another CPU ("... [continued]"), one with halves
// timed on different clocks, and another command's.
const fsyncTraceFixture = `     0.000 ( 0.135 ms): postgres/18042 fdatasync(fd: 11)                                                     = 0
     0.354 ( 0.118 ms): postgres/18041 fdatasync(fd: 11)                                                     = 0
     5.239 (         ): postgres/18042 fdatasync(fd: 11)                                                  ...
     5.240 ( 0.300 ms): postgres/18043 fdatasync(fd: 11)                                                     = 0
     5.239 ( 0.186 ms): postgres/18042  ... [continued]: fdatasync())                                        = 0
   900.100 (27.700 ms): postgres/18041 fdatasync(fd: 11)                                                     = 0
  1500.000 (18446744073709.062 ms): postgres/18043 fdatasync(fd: 11)                                         = 0
  2000.000 ( 0.200 ms): postgres/17781 fsync(fd: 4)                                                          = 0
  2100.000 (99.000 ms): python3/900 fdatasync(fd: 3)                                                         = 0
`

// TestTraceFsyncSummary: the summary joins continued calls, sets aside
// impossible times and other commands, and names each flush over 10 ms.
func TestTraceFsyncSummary(t *testing.T) {
	if !haveTool(t, "python3", "trace-fsync.sh is not checked") {
		return
	}
	trace := filepath.Join(t.TempDir(), "trace.txt")
	if err := os.WriteFile(trace, []byte(fsyncTraceFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("./trace-fsync.sh", "summary", trace).CombinedOutput()
	if err != nil {
		t.Fatalf("trace-fsync.sh summary: %v\n%s", err, out)
	}
	for _, want := range []string{
		"postgres: 6 flushes in 2.0 s (3/s), 1 with unusable times",
		"max 27.7",
		"over 2/5/10/20/50 ms: 1 / 1 / 1 / 1 / 0",
		"over 10 ms (s into the trace: ms): 0.9: 27.7",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command("./trace-fsync.sh", "summary", trace, "python3").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "python3: 1 flushes") {
		t.Errorf("summary of another command: %v\n%s", err, out)
	}
	if out, err := exec.Command("./trace-fsync.sh", "summary", trace, "nginx").CombinedOutput(); err == nil {
		t.Errorf("summary of a command with no flush succeeded:\n%s", out)
	}
}

// TestTraceFsyncRecord records a process's flushes for real, where perf
// can trace this machine (root, perf installed); CI does not install perf,
// so there it is skipped.
func TestTraceFsyncRecord(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs perf and root")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3")
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.txt")
	// The flusher names itself (prctl PR_SET_NAME) with a command name no
	// other process on the machine has: its interpreter may be reached
	// through a wrapper script, so no file name can be relied on.
	script := "import ctypes, os, time\nctypes.CDLL(None).prctl(15, b'mgflush', 0, 0, 0)\n" +
		"fd = os.open(" + `"` + filepath.Join(dir, "f") + `"` + ", os.O_WRONLY | os.O_CREAT)\n" +
		"while True:\n    os.write(fd, b'x' * 8192)\n    os.fdatasync(fd)\n    time.sleep(0.005)\n"
	// The flusher flushes about 150 times a second for as long as the
	// recording lasts (perf itself takes a second or so to start).
	flush := exec.Command(python, "-c", script)
	if err := flush.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flush.Process.Kill(); _ = flush.Wait() }()
	if out, err := exec.Command("./trace-fsync.sh", "record", "4", trace).CombinedOutput(); err != nil {
		t.Skipf("perf cannot trace here: %v\n%s", err, out)
	}
	out, err := exec.Command("./trace-fsync.sh", "summary", trace, "mgflush").CombinedOutput()
	if err != nil {
		head, _ := exec.Command("head", "-5", trace).CombinedOutput()
		t.Fatalf("trace-fsync.sh summary: %v\n%s\nthe trace begins:\n%s", err, out, head)
	}
	m := regexp.MustCompile(`mgflush: (\d+) flushes in `).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no flush of the flusher in the summary:\n%s", out)
	}
	// At most 4 s of a flush every 5 ms or more; at least a few tenths of
	// a second of them, whatever perf's start took.
	if n, _ := strconv.Atoi(string(m[1])); n < 50 || n > 800 {
		t.Fatalf("%d flushes of the flusher recorded in 4 s, want 50 to 800:\n%s", n, out)
	}
	t.Logf("%s", out)
}
