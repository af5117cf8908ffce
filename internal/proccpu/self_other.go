//go:build !unix

package proccpu

import "time"

// Self is 0 where there is no getrusage.
func Self() time.Duration { return 0 }
