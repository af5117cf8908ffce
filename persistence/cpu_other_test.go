//go:build !linux

package persistence_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// cpuMeter reports nothing where /proc and getrusage are not at hand.
type cpuMeter struct{}

func startCPU(*testing.B, *pgxpool.Pool) *cpuMeter { return &cpuMeter{} }

func (*cpuMeter) report(*testing.B) {}
