//go:build unix

// Package cputime reads the process's own CPU time, for the benchmarks that
// report CPU per operation beside wall time (on a shared 2-core machine the
// wall time of one run says little, the CPU a request cost says more).
package cputime

import (
	"syscall"
	"time"
)

// Process is this process's user+system CPU time so far; 0 when it cannot
// be read.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
