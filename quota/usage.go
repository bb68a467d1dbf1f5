package quota

// Usage is one answer's token usage in the four parts the gateway meters
// (docs/quotas.md, Cached tokens): uncached input, cache reads, cache
// writes and output (reasoning included). The zero value is "nothing
// reported": the reservation then stands.
type Usage struct {
	Input, CacheRead, CacheWrite, Output int64
	// Known is true when the answer reported any count.
	Known bool
}

// countedInput returns the input tokens a limit counts: uncached input
// and cache writes, plus cache reads when cacheReads (the subject's
// count_cache_reads).
func (u *Usage) countedInput(cacheReads bool) int64 {
	n := u.Input + u.CacheWrite
	if cacheReads {
		n += u.CacheRead
	}
	return n
}

// counted returns the tokens a limit counts (see countedInput) with the
// output.
func (u *Usage) counted(cacheReads bool) int64 { return u.countedInput(cacheReads) + u.Output }
