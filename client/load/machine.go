package load

// MachineUsage is what the load generator's machine did during the
// measured window. When the node (and its database) run on the same
// machine, as in deploy/measure.sh, BusyCores says how close the box was
// to saturation: latency measured on a box with every core busy is mostly
// queueing for CPU, whatever the node does.
type MachineUsage struct {
	// CPUs is how many CPUs the machine has (/proc/stat).
	CPUs int `json:"cpus"`
	// BusyCores is the CPU time every process and the kernel used, per
	// second of the window: 2.0 is two cores busy all the time.
	BusyCores float64 `json:"busyCores"`
	// LoadGeneratorCores is this matchctl's own share of BusyCores.
	LoadGeneratorCores float64 `json:"loadGeneratorCores"`
	// DatabaseCores is the share of the PostgreSQL server given by
	// --database-pid: its postmaster and its backends, those that ended
	// within the window included. Absent without the flag.
	DatabaseCores *float64 `json:"databaseCores,omitempty"`
	// ServerCores is the share of the server processes the run was given
	// (a failover's survivors), summed. Absent without them.
	ServerCores *float64 `json:"serverCores,omitempty"`
}
