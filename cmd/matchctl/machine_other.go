//go:build !linux

package main

// machineWatch reads nothing where there is no /proc/stat: the report
// leaves the machine's figures out.
type machineWatch struct{}

func (*machineWatch) markStart()           {}
func (*machineWatch) markEnd()             {}
func (*machineWatch) usage() *MachineUsage { return nil }
