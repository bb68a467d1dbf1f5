package upstream

import "github.com/valyala/fasthttp"

// Fence is the residency guard (docs/residency.md): the set of
// targets, by Target.Index, a client key's requests may reach: those whose
// residency label is one of the key's. The walk checks it before each
// member, independently of the load-time proof that makes it redundant.
// A nil *Fence admits every target. Immutable; safe for concurrent use.
type Fence struct {
	bits []uint64
}

// NewFence returns the Fence admitting the targets i with allowed[i].
func NewFence(allowed []bool) *Fence {
	f := &Fence{bits: make([]uint64, (len(allowed)+63)/64)}
	for i, ok := range allowed {
		if ok {
			f.bits[i/64] |= 1 << (i % 64)
		}
	}
	return f
}

// Admits reports whether target index i may be called. Allocation-free.
func (f *Fence) Admits(i int) bool {
	if f == nil {
		return true
	}
	w := i / 64
	return i >= 0 && w < len(f.bits) && f.bits[w]&(1<<(i%64)) != 0
}

// fenced ends the walk at member t, which the call's Fence refuses: 500
// internal_error in the surface's envelope, no call to t. Result.Fenced
// tells the caller to log and count it.
func (w *walk) fenced(t *Target) bool {
	status := fasthttp.StatusInternalServerError
	w.rc.SetStatusCode(status)
	w.rc.SetContentType("application/json")
	w.rc.SetBody(AppendSurfaceError(nil, w.call.Surface, status,
		"internal gateway error: the request would reach a target outside its client key's residency", TypeServer, CodeInternalError))
	w.res.Target, w.res.Status, w.res.Class, w.res.Fenced = t, status, ClassClient, true
	w.headers(t)
	return true
}
