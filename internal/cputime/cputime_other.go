//go:build !unix

// Package cputime reads the process's own CPU time, for the benchmarks that
// report CPU per operation beside wall time.
package cputime

import "time"

// Process is 0 where getrusage(2) does not exist.
func Process() time.Duration { return 0 }
