package upstream

import (
	"testing"
	"time"
)

// fakeQuota refuses the members in full, each with its wait, and records
// what the walk entered.
type fakeQuota struct {
	full    map[string]time.Duration
	entered []string
}

func (q *fakeQuota) Enter(target string) (time.Duration, bool) {
	q.entered = append(q.entered, target)
	if w, ok := q.full[target]; ok {
		return w, false
	}
	return 0, true
}

// TestWalkSkipsMemberWithoutQuota: a member without room in its own
// limits is skipped like a parked one (no call), the walk goes on inside
// the chain, and when every candidate was skipped for its quota the answer
// is 429 target_quota_exhausted with the smallest wait.
func TestWalkSkipsMemberWithoutQuota(t *testing.T) {
	h := newHarness(t)
	ma, mb := h.mock("a", ok("a")), h.mock("b", ok("b"))
	ta, tb := h.target("a", nil), h.target("b", nil)

	q := &fakeQuota{full: map[string]time.Duration{"a": 3 * time.Second}}
	call := chatCall(false)
	call.Quota = q
	obs := newRec()
	rc, res := h.walk(call, []*Target{ta, tb}, 5*time.Second, obs)
	if rc.Response.StatusCode() != 200 || hdr(rc, HeaderTarget) != "b" || ma.calls.Load() != 0 || mb.calls.Load() != 1 {
		t.Fatalf("status %d target %q calls a=%d b=%d; want b to serve, a untouched",
			rc.Response.StatusCode(), hdr(rc, HeaderTarget), ma.calls.Load(), mb.calls.Load())
	}
	if res.Attempts != 1 || len(q.entered) != 2 {
		t.Fatalf("attempts %d, entered %v", res.Attempts, q.entered)
	}

	q = &fakeQuota{full: map[string]time.Duration{"a": 1500 * time.Millisecond, "b": 3 * time.Second}}
	call = chatCall(false)
	call.Quota = q
	rc, res = h.walk(call, []*Target{ta, tb}, 5*time.Second, newRec())
	if rc.Response.StatusCode() != 429 || hdr(rc, "Retry-After") != "2" || res.Class != ClassQuota ||
		!contains(string(rc.Response.Body()), `"code":"target_quota_exhausted"`) {
		t.Fatalf("all skipped: status %d Retry-After %q class %s body %s", rc.Response.StatusCode(), hdr(rc, "Retry-After"), res.Class, rc.Response.Body())
	}
	if ma.calls.Load() != 0 || mb.calls.Load() != 1 {
		t.Fatalf("a member without room was called: a=%d b=%d", ma.calls.Load(), mb.calls.Load())
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
