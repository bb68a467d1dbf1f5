package quota

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// The learned estimate (docs/quotas.md, Cached tokens): an agent resends
// its whole context every turn and reads most of it from the provider's
// cache, which its limits may not count. Reserving ceil(body bytes / 4)
// for it would hold several times what it will use while its stream runs,
// so each key learns the ratio of the input tokens its limits counted to
// that figure, and reserves ceil(body bytes / 4 × ratio).

// Ratios are kept in millionths.
const (
	ratioOne = 1_000_000
	// ratioMin and ratioMax bound the ratio and each observation.
	ratioMin = 50_000 // 0.05
	ratioMax = ratioOne
	// ratioWeight is the weight of a new observation, in tenths: an
	// exponential average with weight 0.1.
	ratioWeight = 10
)

// estimator is one key's learned ratio, per process. A ratio is one
// atomic: reading it is a load, learning a CompareAndSwap loop, so the
// request path takes no lock and allocates nothing. Safe for concurrent
// use.
type estimator struct {
	// ppm is the ratio in millionths; 0 means unlearned (1).
	ppm atomic.Int64
}

// ratio returns the ratio in millionths.
func (e *estimator) ratio() int64 {
	if e == nil {
		return ratioOne
	}
	if v := e.ppm.Load(); v > 0 {
		return v
	}
	return ratioOne
}

// Ratio returns the ratio as a number in [0.05, 1].
func (e *estimator) Ratio() float64 { return float64(e.ratio()) / ratioOne }

// learn folds in one settled request: counted input tokens of a body of
// quarter = ceil(body bytes / 4). The observation is clamped to [0.05, 1]
// first, so the average stays there and one odd request (images, whose
// tokens outnumber their bytes) moves it by a tenth at most.
func (e *estimator) learn(counted, quarter int64) {
	if e == nil || quarter <= 0 || counted < 0 {
		return
	}
	obs := int64(ratioMax)
	if counted < quarter { // counted × 10^6 fits: both are far below 2^43
		obs = max(counted*ratioOne/quarter, ratioMin)
	}
	for {
		old := e.ppm.Load()
		cur := old
		if cur == 0 {
			cur = ratioOne
		}
		next := min(max(cur+(obs-cur)/ratioWeight, ratioMin), ratioMax)
		if e.ppm.CompareAndSwap(old, next) {
			return
		}
	}
}

// estimators are the ratios of the keys, by name, shared by every Plan
// built on one Quotas, so a reload that keeps a key keeps its ratio.
type estimators struct {
	mu     sync.Mutex
	byName map[string]*estimator
}

// get returns key name's estimator, creating it.
func (s *estimators) get(name string) *estimator {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byName == nil {
		s.byName = map[string]*estimator{}
	}
	e := s.byName[name]
	if e == nil {
		e = &estimator{}
		s.byName[name] = e
	}
	return e
}

// prune drops the ratios of keys not in keep.
func (s *estimators) prune(keep map[string]*estimator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.byName {
		if keep[name] == nil {
			delete(s.byName, name)
		}
	}
}

// bodyQuarter is ceil(body bytes / 4), the estimate's unit of input.
func bodyQuarter(n int) int64 { return (int64(n) + 3) / 4 }

// Estimate returns the tokens reserved before the call for an unlearned
// key (docs/quotas.md): ceil(len(body)/4) plus the completion part (see
// completionPart).
func Estimate(body []byte, completion int64) int64 {
	return estimateAt(body, completion, ratioOne)
}

// estimateAt is the reservation at ratio ppm (millionths):
// ceil(len(body) / 4 × ratio) plus the completion part.
func estimateAt(body []byte, completion, ppm int64) int64 {
	n := int64(len(body))
	in := (n*ppm + 4*ratioOne - 1) / (4 * ratioOne) // n × 10^6 fits any body below 9 TB
	return in + completionPart(body, completion)
}

// completionPart returns the smallest of the body's max_tokens,
// max_completion_tokens or max_output_tokens and completion, or
// completion when it names none. The names are found with one byte search
// for `"max_`, so a nested member of the same name may be read instead;
// settlement corrects any difference.
func completionPart(body []byte, completion int64) int64 {
	c := completion
	for off := 0; off < len(body); {
		i := bytes.Index(body[off:], maxPrefix)
		if i < 0 {
			break
		}
		j := off + i + len(maxPrefix)
		off = j
		for _, name := range maxTokenNames {
			if bytes.HasPrefix(body[j:], name) {
				if v, ok := valueAfter(body, j+len(name)); ok && v < c {
					c = v
				}
				break
			}
		}
	}
	return max(c, 0)
}

var (
	maxPrefix     = []byte(`"max_`)
	maxTokenNames = [...][]byte{[]byte(`tokens"`), []byte(`completion_tokens"`), []byte(`output_tokens"`)}
)

// valueAfter reads `: <integer>` at body[j:].
func valueAfter(body []byte, j int) (int64, bool) {
	for j < len(body) && isSpace(body[j]) {
		j++
	}
	if j >= len(body) || body[j] != ':' {
		return 0, false
	}
	j++
	for j < len(body) && isSpace(body[j]) {
		j++
	}
	var v int64
	k := j
	for k < len(body) && body[k] >= '0' && body[k] <= '9' && v < 1<<40 {
		v = v*10 + int64(body[k]-'0')
		k++
	}
	return v, k > j
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
