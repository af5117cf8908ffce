package main

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProcessMetrics reads this test process's own CPU time and RSS and
// checks them against what the runtime and a busy loop say.
func TestProcessMetrics(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	read := func() (cpu, rss float64) {
		var b bytes.Buffer
		if err := writeProcessMetrics(&b); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(b.String(), "\n") {
			name, v, _ := strings.Cut(l, " ")
			f, _ := strconv.ParseFloat(v, 64)
			switch name {
			case "process_cpu_seconds_total":
				cpu = f
			case "process_resident_memory_bytes":
				rss = f
			}
		}
		return cpu, rss
	}
	cpu0, rss0 := read()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if rss0 < 1<<20 || rss0 > float64(ms.Sys)+256<<20 {
		t.Errorf("RSS %.0f bytes, runtime holds %d from the OS", rss0, ms.Sys)
	}
	// Burn about 300 ms of CPU; the counter must move (it ticks at 10 ms).
	end := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(end) {
		x++
	}
	_ = os.Getpid() + x
	cpu1, _ := read()
	if cpu1 < cpu0+0.05 {
		t.Errorf("CPU seconds went from %g to %g over a 300 ms busy loop", cpu0, cpu1)
	}
}
