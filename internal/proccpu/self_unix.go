//go:build unix

package proccpu

import (
	"syscall"
	"time"
)

// Self is the user and system CPU time this process has used so far, all
// its threads together; 0 if the system will not say.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
