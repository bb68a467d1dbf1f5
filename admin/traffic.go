package admin

import (
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// record adds a finished request to the histories (docs/console.md,
// History), in Unix second sec: to its key's — the request as the client
// saw it: latency to the answer's end, an error when the status is 400 or
// more — and to each target it called: the call's duration (a stream's to
// its first byte), an error when the call failed on the provider's side,
// and the answer's tokens on the target that answered.
// c is the key's counters (nil for a key removed by a reload).
func (r *Recorder) record(e *telemetry.Entry, c *keyCounters, sec int64) {
	tokens := tokensOf(e.Usage)
	if c != nil && c.history != nil {
		c.history.Record(sec, e.Latency, e.Status >= 400, tokens)
	}
	if len(e.Steps) == 0 {
		return
	}
	m := *r.targets.Load()
	last := len(e.Steps) - 1
	for i := range e.Steps {
		st := &e.Steps[i]
		if st.Skipped || st.Refused || st.Target == nil {
			continue
		}
		h := m[st.Target.Name]
		if h == nil {
			continue // past MaxHistories, or gone in a reload
		}
		class, tok := st.Class, int64(0)
		if i == last && st.Class == upstream.ClassOK {
			// The member that answered: a committed stream's outcome is
			// known only at its end, and the tokens are its answer's.
			if e.Stream {
				class = e.Class
			}
			tok = tokens
		}
		h.Record(sec, st.Took, providerFailure(class), tok)
	}
}

// providerFailure reports whether a call's class is the provider's failure:
// what a failover or the breaker acts on, and a refused credential. A
// client's 4xx and a client that went away are not.
func providerFailure(c upstream.Class) bool {
	return c.Failover() || c == upstream.ClassAuth
}

// tokensOf is the tokens an answer reported, input and output.
func tokensOf(u upstream.Usage) int64 {
	var n int64
	if u.HasPrompt {
		n += u.Prompt
	}
	if u.HasCompletion {
		n += u.Completion
	}
	return n
}
