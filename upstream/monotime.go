package upstream

import _ "unsafe" // go:linkname

// nanotime is the runtime's monotonic clock in nanoseconds: one vDSO read,
// where time.Now makes two (wall and monotonic). A pooled connection stamps
// every read and checks its age before every reuse, so the clock is read a
// few times per request; only intervals are ever taken from it. The runtime
// keeps this link for outside packages (go.dev/issue/67401).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
