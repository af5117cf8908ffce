package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// writeProcessMetrics appends the two standard process metrics a load tool
// reads (process_cpu_seconds_total, process_resident_memory_bytes, with the
// names and meaning of the Prometheus Go client's process collector) from
// /proc/self. It is a stop-gap until /metrics is served by that collector;
// on systems without /proc it writes nothing.
func writeProcessMetrics(w io.Writer) error {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil // not Linux: no process metrics
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return fmt.Errorf("parse /proc/self/stat: no command name")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15, rss (pages) 24.
	if len(f) < 22 {
		return fmt.Errorf("parse /proc/self/stat: %d fields", len(f)+2)
	}
	var v [3]float64
	for k, idx := range []int{11, 12, 21} {
		v[k], err = strconv.ParseFloat(f[idx], 64)
		if err != nil {
			return fmt.Errorf("parse /proc/self/stat field %d: %w", idx+3, err)
		}
	}
	const clkTck = 100 // USER_HZ on every Linux architecture Go supports
	_, err = fmt.Fprintf(w, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"+
		"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n"+
		"# HELP process_resident_memory_bytes Resident memory size in bytes.\n"+
		"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %g\n",
		(v[0]+v[1])/clkTck, v[2]*float64(os.Getpagesize()))
	if err != nil {
		return fmt.Errorf("write process metrics: %w", err)
	}
	return nil
}
