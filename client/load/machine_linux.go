//go:build linux

package load

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/matchgrain/matchgrain/internal/proccpu"
)

// machineWatch takes the machine's and this process's CPU counters (and
// those of the database server at dbPID, if set) at the start and the end
// of the measured window.
type machineWatch struct {
	dbPID             int
	db0, db1          time.Duration // the database's processes' CPU
	dbOK              bool          // both readings of the database worked
	serverPIDs        []int
	srv0, srv1        time.Duration // the server processes' CPU, summed
	srvOK             bool          // every reading of them worked
	cpus              int
	busy0, total0     uint64 // /proc/stat jiffies
	self0             time.Duration
	at0               time.Time
	busy1, total1     uint64
	self1             time.Duration
	at1               time.Time
	started, finished bool
}

func (m *machineWatch) markStart() {
	var err error
	m.cpus, m.busy0, m.total0, err = readProcStat()
	m.self0, m.at0, m.started = proccpu.Self(), time.Now(), err == nil
	if m.dbPID > 0 {
		m.db0, m.dbOK = proccpu.Tree(m.dbPID)
	}
	m.srv0, m.srvOK = treesCPU(m.serverPIDs)
}

// serverCPU is the server processes' CPU over the window (0 unknown).
func (m *machineWatch) serverCPU() time.Duration {
	if !m.srvOK || !m.finished {
		return 0
	}
	return m.srv1 - m.srv0
}

// treesCPU sums proccpu.Tree over pids; ok only if there are some and
// every one could be read.
func treesCPU(pids []int) (sum time.Duration, ok bool) {
	for _, pid := range pids {
		cpu, read := proccpu.Tree(pid)
		if !read {
			return 0, false
		}
		sum += cpu
	}
	return sum, len(pids) > 0
}

func (m *machineWatch) markEnd() {
	if !m.started {
		return
	}
	var err error
	_, m.busy1, m.total1, err = readProcStat()
	m.self1, m.at1, m.finished = proccpu.Self(), time.Now(), err == nil
	if m.dbPID > 0 {
		var ok bool
		m.db1, ok = proccpu.Tree(m.dbPID)
		m.dbOK = m.dbOK && ok
	}
	if m.srvOK {
		var ok bool
		m.srv1, ok = treesCPU(m.serverPIDs)
		m.srvOK = ok
	}
}

// usage is nil where /proc/stat could not be read or the window is empty.
func (m *machineWatch) usage() *MachineUsage {
	if !m.started || !m.finished || m.total1 <= m.total0 {
		return nil
	}
	secs := m.at1.Sub(m.at0).Seconds()
	if secs <= 0 {
		return nil
	}
	u := &MachineUsage{
		CPUs:               m.cpus,
		BusyCores:          float64(m.busy1-m.busy0) / float64(m.total1-m.total0) * float64(m.cpus),
		LoadGeneratorCores: (m.self1 - m.self0).Seconds() / secs,
	}
	if m.dbOK {
		cores := (m.db1 - m.db0).Seconds() / secs
		u.DatabaseCores = &cores
	}
	if m.srvOK {
		cores := (m.srv1 - m.srv0).Seconds() / secs
		u.ServerCores = &cores
	}
	return u
}

// readProcStat returns the number of CPUs and the busy and total jiffies
// of all of them from /proc/stat's first line. Busy is everything but idle
// and iowait (a CPU waiting for the disk is free to run anything else).
func readProcStat() (cpus int, busy, total uint64, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, 0, fmt.Errorf("read machine CPU: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "cpu "):
			fields := strings.Fields(line)[1:]
			for i, s := range fields {
				v, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					return 0, 0, 0, fmt.Errorf("read machine CPU: /proc/stat field %q: %w", s, err)
				}
				// user nice system idle iowait irq softirq steal guest guest_nice;
				// guest time is counted in user already.
				if i >= 8 {
					break
				}
				total += v
				if i != 3 && i != 4 {
					busy += v
				}
			}
		case strings.HasPrefix(line, "cpu"):
			cpus++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, fmt.Errorf("read machine CPU: %w", err)
	}
	if total == 0 || cpus == 0 {
		return 0, 0, 0, fmt.Errorf("read machine CPU: no cpu lines in /proc/stat")
	}
	return cpus, busy, total, nil
}
