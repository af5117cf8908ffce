//go:build !linux

package sockio

import "net"

func wrap(c net.Conn) net.Conn { return c }

func isRaw(net.Conn) bool { return false }
