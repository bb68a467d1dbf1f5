package batch

import "time"

// SetStoreWait bounds each ownership store call of s to d (set before s
// serves): tests make a slow read outlast it in milliseconds, not seconds.
func SetStoreWait(s *Server, d time.Duration) { s.storeWait = d }
