package traffic

import "time"

// Histogram counts latencies by bucket (see Bucket).
type Histogram [Buckets]uint64

// Add adds o's counts to h.
func (h *Histogram) Add(o *Histogram) {
	for i := range h {
		h[i] += o[i]
	}
}

// Quantile returns the q-quantile (0 < q ≤ 1) of the latencies counted,
// interpolated linearly inside its bucket; ok is false when h is empty. A
// quantile in the last bucket is that bucket's lower bound.
func (h *Histogram) Quantile(q float64) (d time.Duration, ok bool) {
	var total uint64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0, false
	}
	rank := q * float64(total)
	var cum uint64
	for i, n := range h {
		if n == 0 || float64(cum+n) < rank {
			cum += n
			continue
		}
		lo := BucketLow(i)
		if i == Buckets-1 {
			return lo, true
		}
		frac := (rank - float64(cum)) / float64(n)
		return lo + time.Duration(frac*float64(BucketLow(i+1)-lo)), true
	}
	return BucketLow(Buckets - 1), true // q > 1
}

// Span is the sum of a run of seconds of one series.
type Span struct {
	// Seconds is how many seconds of the run the series existed for;
	// 0 means no data (the run is before the series was created).
	Seconds  int
	Requests uint64
	Errors   uint64
	Tokens   uint64
	Latency  Histogram
}

// Add adds o to sp.
func (sp *Span) Add(o *Span) {
	sp.Seconds += o.Seconds
	sp.Requests += o.Requests
	sp.Errors += o.Errors
	sp.Tokens += o.Tokens
	sp.Latency.Add(&o.Latency)
}

// Frame is how a window of whole seconds is cut into spans of Step
// seconds, aligned to multiples of Step in Unix time: span i covers
// [Start+i·Step, Start+(i+1)·Step), the last one ending at End.
type Frame struct {
	Start, End int64 // Unix seconds; End is excluded
	Step       int64
	N          int
}

// NewFrame returns the frame of the window seconds before end (the second
// in progress, excluded), in spans of step seconds. window is clamped to
// [step, MaxWindow] and step to [1, MaxWindow].
func NewFrame(end int64, window, step int) Frame {
	step = min(max(step, 1), MaxWindow)
	window = min(max(window, step), MaxWindow)
	n := window / step
	last := (end - 1) / int64(step) * int64(step)
	return Frame{Start: last - int64(n-1)*int64(step), End: end, Step: int64(step), N: n}
}

// Read sums f's spans of s into out (len(out) ≥ f.N), oldest first, and
// returns them. It reads each second once; a second being cleared as it is
// read counts as empty. It allocates nothing.
func (s *Series) Read(f Frame, out []Span) []Span {
	out = out[:f.N]
	for i := range out {
		sp := &out[i]
		*sp = Span{}
		from := f.Start + int64(i)*f.Step
		to := min(from+f.Step, f.End)
		for sec := max(from, s.born); sec < to; sec++ {
			sp.Seconds++
			s.slots[uint64(sec)%Seconds].read(sec, sp)
		}
	}
	return out
}

// read adds the counts of second sec to sp when the slot holds it.
func (sl *slot) read(sec int64, sp *Span) {
	if sl.sec.Load() != sec {
		return // never written in that second, or since reused
	}
	var one Span
	one.Requests = uint64(sl.requests.Load())
	one.Errors = uint64(sl.errors.Load())
	one.Tokens = sl.tokens.Load()
	for i := range sl.latency {
		one.Latency[i] = uint64(sl.latency[i].Load())
	}
	if sl.sec.Load() != sec {
		return // cleared for a later second while read
	}
	one.Seconds = 0
	sp.Add(&one)
}
