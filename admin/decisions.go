package admin

import (
	"slices"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/decisions"
)

// decisions answers GET /api/decisions[?after=SEQ[&wait=SECONDS]][&key=…]
// [&target=…][&status=…] (docs/console.md, The console's API). Without
// after it answers at once with the newest decisions; with after, the
// decisions after SEQ, waiting up to wait (default 25 s, at most 55 s,
// 0 = at once) for one to come. The filters keep the decisions of one key,
// of one target the walk reached, and of a status or status class.
func (s *Server) decisions(rc *fasthttp.RequestCtx) {
	args := rc.QueryArgs()
	var after uint64
	wait := time.Duration(0)
	if args.Has("after") {
		n, err := strconv.ParseUint(string(args.Peek("after")), 10, 64)
		if err != nil {
			s.jsonError(rc, fasthttp.StatusBadRequest, "after: want a decision sequence number (0 for the newest 200)")
			return
		}
		after, wait = n, defaultWait
	}
	if v := args.Peek("wait"); len(v) > 0 {
		n, err := strconv.ParseFloat(string(v), 64)
		if err != nil || n < 0 || n != n {
			s.jsonError(rc, fasthttp.StatusBadRequest, "wait: want seconds, 0 to 55")
			return
		}
		if args.Has("after") {
			wait = time.Duration(min(n, maxWait.Seconds()) * float64(time.Second))
		}
	}
	f, err := parseDecisionFilter(args)
	if err != nil {
		s.jsonError(rc, fasthttp.StatusBadRequest, err.Error())
		return
	}
	ring := s.opts.Recorder.Ring()
	if after > ring.Head() {
		after = 0 // the process restarted: start over from the newest
	}
	deadline := time.Now().Add(wait)
	for {
		ds, next := f.after(ring, after)
		if len(ds) > 0 || !time.Now().Before(deadline) || s.shuttingDown() {
			if ds == nil {
				ds = []decisions.Decision{}
			}
			s.writeJSON(rc, struct {
				Decisions []decisions.Decision `json:"decisions"`
				Next      uint64               `json:"next"`
				Dropped   uint64               `json:"dropped"`
			}{ds, next, ring.Dropped()})
			return
		}
		// Nothing that passes the filter yet: go on after what was read.
		after = next
		s.pause(pollEvery)
	}
}

// decisionFilter keeps the decisions /api/decisions is asked for. The zero
// value keeps every decision.
type decisionFilter struct {
	key       string
	hasKey    bool
	target    string
	hasTarget bool
	// status is an exact status, or statusClass a class: 2..5 for "2xx"
	// to "5xx", errorClass for "error" (400 and above).
	status      int
	statusClass int
}

const errorClass = -1

// parseDecisionFilter reads key (a client key's name; empty for requests
// without one), target (a member the walk reached) and status (a number,
// 2xx to 5xx, or error).
func parseDecisionFilter(args *fasthttp.Args) (decisionFilter, error) {
	var f decisionFilter
	if args.Has("key") {
		f.key, f.hasKey = string(args.Peek("key")), true
	}
	if args.Has("target") {
		f.target, f.hasTarget = string(args.Peek("target")), true
	}
	switch v := string(args.Peek("status")); {
	case v == "":
	case v == "error":
		f.statusClass = errorClass
	case len(v) == 3 && v[1:] == "xx" && v[0] >= '2' && v[0] <= '5':
		f.statusClass = int(v[0] - '0')
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n > 599 {
			return f, &paramError{"status: want a status (e.g. 429), 2xx, 3xx, 4xx, 5xx or error"}
		}
		f.status = n
	}
	return f, nil
}

func (f *decisionFilter) any() bool {
	return f.hasKey || f.hasTarget || f.status != 0 || f.statusClass != 0
}

func (f *decisionFilter) keep(d *decisions.Decision) bool {
	switch {
	case f.hasKey && d.Key != f.key:
		return false
	case f.hasTarget && !slices.Contains(d.Tried, f.target):
		return false
	case f.status != 0 && d.Status != f.status:
		return false
	case f.statusClass == errorClass && d.Status < 400:
		return false
	case f.statusClass > 0 && d.Status/100 != f.statusClass:
		return false
	}
	return true
}

// after returns the decisions after seq that pass f, oldest first (at most
// MaxDecisions, the newest), and the sequence number to ask after next.
// With a filter it looks at every decision the ring holds, so the list is
// as long as the ring allows.
func (f *decisionFilter) after(ring *decisions.Ring, seq uint64) ([]decisions.Decision, uint64) {
	if !f.any() {
		return ring.After(seq, MaxDecisions)
	}
	ds, next := ring.After(seq, decisions.Size)
	kept := ds[:0]
	for i := range ds {
		if f.keep(&ds[i]) {
			kept = append(kept, ds[i])
		}
	}
	if len(kept) > MaxDecisions {
		kept = kept[len(kept)-MaxDecisions:]
	}
	if len(kept) == 0 {
		return nil, next
	}
	return kept, next
}
