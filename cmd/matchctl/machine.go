//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// machineWatch takes the machine's and this process's CPU counters (and
// those of the database server at dbPID, if set) at the start and the end
// of the measured window.
type machineWatch struct {
	dbPID             int
	db0, db1          map[int]uint64 // CPU ticks by pid of the database's processes
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
	m.self0, m.at0, m.started = selfCPU(), time.Now(), err == nil
	if m.dbPID > 0 {
		m.db0 = treeCPU(m.dbPID)
	}
}

func (m *machineWatch) markEnd() {
	if !m.started {
		return
	}
	var err error
	_, m.busy1, m.total1, err = readProcStat()
	m.self1, m.at1, m.finished = selfCPU(), time.Now(), err == nil
	if m.dbPID > 0 {
		m.db1 = treeCPU(m.dbPID)
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
	if len(m.db1) > 0 {
		var ticks uint64
		for pid, t1 := range m.db1 {
			// A process started within the window counts from zero.
			ticks += t1 - min(m.db0[pid], t1)
		}
		cores := float64(ticks) / userHZ / secs
		u.DatabaseCores = &cores
	}
	return u
}

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, 100 on
// every Linux architecture Go supports.
const userHZ = 100

// treeCPU returns the user and system CPU ticks of root and of its direct
// children (PostgreSQL's backends and helpers are all the postmaster's
// children), by pid; nil if root is gone.
func treeCPU(root int) map[int]uint64 {
	_, ticks, ok := procStat(root)
	if !ok {
		return nil
	}
	out := map[int]uint64{root: ticks}
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		if parent, t, ok := procStat(pid); ok && parent == root {
			out[pid] = t
		}
	}
	return out
}

// procStat reads a process's parent and its user plus system CPU ticks
// from /proc/PID/stat; false if it cannot (the process exited).
func procStat(pid int) (ppid int, ticks uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields that follow start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, false
	}
	pp, err1 := strconv.Atoi(f[1])
	ut, err2 := strconv.ParseUint(f[11], 10, 64)
	st, err3 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return pp, ut + st, true
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

// selfCPU is this process's CPU time so far, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
