package deadline

// What the package relies on inside the Go runtime, kept in this one file
// and pinned by runtime_reliance_test.go: runtime.nanotime, reached through
// a linkname directive, is the clock of time.Time's monotonic reading, so
// intervals taken from Mono and from time.Now agree.

import (
	_ "unsafe" // go:linkname
)

// Mono is the runtime's monotonic clock in nanoseconds: one vDSO read,
// where time.Now makes two (wall and monotonic). Only intervals are ever
// taken from it. The runtime keeps this link for outside packages
// (go.dev/issue/67401).
//
//go:linkname Mono runtime.nanotime
func Mono() int64
