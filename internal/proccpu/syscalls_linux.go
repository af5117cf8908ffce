package proccpu

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// SelfSystemCalls is how many read-like and write-like system calls this
// process has made so far, all its threads together: /proc/self/io's syscr
// and syscw, which count read, readv, pread, write, writev, pwrite and
// sendfile, but not recvmsg, sendmsg or their kin. For a node those are its
// TCP sockets' reads and writes (client connections, PostgreSQL, the links
// between members); memberlist's UDP is not among them. ok is false where
// the kernel does not keep the counts.
func SelfSystemCalls() (reads, writes uint64, ok bool) {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0, false
	}
	var haveR, haveW bool
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		name, value, found := bytes.Cut(sc.Bytes(), []byte(": "))
		if !found {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(value)), 10, 64)
		if err != nil {
			continue
		}
		switch string(name) {
		case "syscr":
			reads, haveR = n, true
		case "syscw":
			writes, haveW = n, true
		}
	}
	return reads, writes, haveR && haveW
}
