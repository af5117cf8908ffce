//go:build !linux

package proccpu

import "time"

// Tree reads nothing where there is no /proc: ok is always false.
func Tree(root int) (cpu time.Duration, ok bool) { return 0, false }

// Parent reads nothing where there is no /proc: ok is always false.
func Parent(pid int) (comm string, ppid int, ok bool) { return "", 0, false }

// SelfSystemCalls reads nothing where there is no /proc: ok is always false.
func SelfSystemCalls() (reads, writes uint64, ok bool) { return 0, 0, false }
