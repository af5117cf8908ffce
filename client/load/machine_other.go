//go:build !linux

package load

import "time"

// machineWatch reads nothing where there is no /proc/stat: the report
// leaves the machine's figures out (the database's too: dbPID is unused).
type machineWatch struct {
	dbPID      int
	serverPIDs []int
}

func (*machineWatch) markStart()               {}
func (*machineWatch) markEnd()                 {}
func (*machineWatch) usage() *MachineUsage     { return nil }
func (*machineWatch) serverCPU() time.Duration { return 0 }
