package provider

import "bytes"

// Usage is the token usage an upstream reported for one answer, read from
// the provider's own fields (docs/quotas.md, Cached tokens). Prompt is
// the whole input, as OpenAI's prompt_tokens counts it; CacheRead and
// CacheWrite are the parts of it the provider read from or wrote to its
// prompt cache, so the four parts metered are Input(), CacheRead,
// CacheWrite and Completion. The zero value is "nothing known".
type Usage struct {
	// Prompt is every input token, cached ones included; meaningful when
	// HasPrompt.
	Prompt int64
	// CacheRead and CacheWrite are the parts of Prompt read from and
	// written to the provider's prompt cache (0 when it reports none);
	// CacheRead + CacheWrite <= Prompt.
	CacheRead, CacheWrite int64
	// Completion is the output token count, reasoning included;
	// meaningful when HasCompletion. Embeddings answers report none.
	Completion int64
	// HasPrompt and HasCompletion say which counts the upstream reported.
	HasPrompt, HasCompletion bool
}

// Known reports whether any count is known.
func (u Usage) Known() bool { return u.HasPrompt || u.HasCompletion }

// Input returns the uncached input tokens: Prompt without the cache's.
func (u Usage) Input() int64 { return u.Prompt - u.CacheRead - u.CacheWrite }

// UsageReporter is a StreamDecoder that knows the usage of the stream it
// decoded so far (the last usage the upstream reported), read from the
// provider's own events. A decoder that wraps another (a translating one)
// delegates to it: the inner decoder saw the provider's fields.
type UsageReporter interface {
	Usage() Usage
}

// UsageReader is an Adapter that reads the usage of its 2xx answers
// itself, from the body the upstream sent (before TranslateResponse). An
// adapter that wraps another delegates to it. See AnswerUsage.
type UsageReader interface {
	AnswerUsage(body []byte) (Usage, bool)
}

// AnswerUsage returns the usage of a's 2xx answer body as the upstream
// sent it: a's own reading when it is a UsageReader, else ReadUsage,
// which knows every provider's names (usage_fields.go). Reading the
// provider's body rather than the translated answer keeps what a client's
// shape has no field for (cache writes, on chat and Responses).
func AnswerUsage(a Adapter, body []byte) (Usage, bool) {
	if r, ok := a.(UsageReader); ok {
		return r.AnswerUsage(body)
	}
	return ReadUsage(body)
}

var usageKey = []byte(`"usage"`)

// maxUsageCandidates bounds how many occurrences of "usage" ReadUsage looks
// at, from the end, before it gives up (a body quoting the word many times
// in nested objects gets no usage rather than an unbounded search).
const maxUsageCandidates = 4

// ReadUsage returns the top-level "usage" object of the JSON object body
// (an answer or one SSE chunk of any provider the gateway speaks), its
// counts named as usage_fields.go lists them. It does not parse the body: it finds the last `"usage"` from the end, proves it is a key of
// the outermost object by scanning whichever side of it is shorter, and
// reads only that object. ok is false when there is none, when it is null,
// or when anything about it is unsure (a duplicate or non-integer count, a
// malformed object): no usage is better than wrong numbers. It does not
// allocate.
func ReadUsage(body []byte) (u Usage, ok bool) {
	p, ok := readUsageParts(body)
	if !ok {
		return Usage{}, false
	}
	return p.resolve()
}

// readUsageParts is ReadUsage before the counts are added up: ok is false
// when there is no usage object or a count in it is doubtful.
func readUsageParts(body []byte) (p usageParts, ok bool) {
	end := len(body)
	for n := 0; n < maxUsageCandidates; n++ {
		i := lastIndex(body[:end], usageKey)
		if i < 0 {
			return usageParts{}, false
		}
		end = i
		p, ok, definite := usageAt(body, i)
		if definite {
			return p, ok
		}
	}
	return usageParts{}, false
}

// lastIndexWindow is how far back lastIndex searches at a time.
const lastIndexWindow = 4 << 10

// lastIndexChunk and lastIndexTail: lastIndex looks at the last
// lastIndexTail bytes first, lastIndexChunk bytes at a time. Over at most
// 64 bytes (bytealg.MaxBruteForce) bytes.Index is one vector compare loop;
// over more it hops between occurrences of sep's first byte, and a quote
// is every few bytes of JSON. A usage object is near the end of an answer.
const (
	lastIndexChunk = 64
	lastIndexTail  = 4 * lastIndexChunk
)

// lastIndex is bytes.LastIndex(b, sep) for a short sep (under
// lastIndexChunk/2 bytes): the tail first (see lastIndexTail), then
// windows from the end with bytes.Index: LastIndex compares byte by byte,
// Index runs vectorized, several times faster on a megabyte without sep.
func lastIndex(b, sep []byte) int {
	end := len(b)
	// Fast path: the tail, a chunk at a time from the end.
	for stop := max(end-lastIndexTail, 0); end >= len(sep) && end > stop && len(sep) < lastIndexChunk/2; {
		start := max(end-lastIndexChunk, 0)
		if found := lastIn(b, sep, start, end); found >= 0 {
			return found
		}
		if start == 0 {
			return -1
		}
		end = start + len(sep) - 1 // an occurrence may straddle the edge
	}
	for end >= len(sep) {
		start := max(end-lastIndexWindow, 0)
		if found := lastIn(b, sep, start, end); found >= 0 {
			return found
		}
		if start == 0 {
			break
		}
		end = start + len(sep) - 1
	}
	return -1
}

// lastIn returns the index in b of the last sep within b[start:end], or -1.
func lastIn(b, sep []byte, start, end int) int {
	found := -1
	for from := start; ; {
		j := bytes.Index(b[from:end], sep)
		if j < 0 {
			return found
		}
		found = from + j
		from = found + 1
	}
}

// usageAt reads the usage at body[i:], where `"usage"` occurs. definite is
// false when that occurrence is not a top-level key (inside a string, a
// string value, a nested key): the caller then tries an earlier one.
func usageAt(body []byte, i int) (p usageParts, ok, definite bool) {
	// Inside a string a quote is escaped by an odd run of backslashes; an
	// even run (none, outside strings) leaves it a real delimiter, and then
	// `"usage"` is a whole string token: its closing quote follows 'e'.
	n := 0
	for p := i - 1; p >= 0 && body[p] == '\\'; p-- {
		n++
	}
	if n%2 == 1 {
		return usageParts{}, false, false
	}
	s := scanner{b: body, i: i + len(usageKey)}
	s.ws()
	if !s.eat(':') {
		return usageParts{}, false, false // a string value, not a key
	}
	s.ws()
	p, ok, valid := s.usageValue()
	if !valid {
		return usageParts{}, false, true // malformed: give up
	}
	// Prove the key is a member of the outermost object, from the nearer end.
	var top bool
	if i < len(body)-s.i {
		top = topLevelKeyAt(body, i)
	} else {
		top = s.restOfRoot()
	}
	if !top {
		return usageParts{}, false, false
	}
	return p, ok, true
}

// topLevelKeyAt reports whether a member of the outermost object of body
// starts (its key's opening quote) at offset at, scanning from the start.
func topLevelKeyAt(body []byte, at int) bool {
	s := scanner{b: body}
	s.ws()
	if !s.eat('{') {
		return false
	}
	for {
		s.ws()
		if s.i == at {
			return true
		}
		if s.i > at || !s.member(0) {
			return false
		}
		s.ws()
		if !s.eat(',') {
			return false
		}
	}
}

// restOfRoot reports whether what follows s.i is the rest of the outermost
// object: further members, its closing brace, then only whitespace.
func (s *scanner) restOfRoot() bool {
	for {
		s.ws()
		if s.eat('}') {
			s.ws()
			return s.i == len(s.b)
		}
		if !s.eat(',') {
			return false
		}
		s.ws()
		if !s.member(0) {
			return false
		}
	}
}

// usageValue reads the usage value at s.i and leaves s.i after it. valid is
// false when the value is not well formed; ok is false for null, for any
// other value than an object, and for an object with a doubtful count.
func (s *scanner) usageValue() (p usageParts, ok, valid bool) {
	if bytes.HasPrefix(s.b[s.i:], nullLiteral) {
		s.i += len(nullLiteral)
		return usageParts{}, false, true
	}
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		// Any other value is not a usage object: skip it, report none.
		return usageParts{}, false, s.value(0)
	}
	p, sure, valid := s.usageObject()
	if !valid || !sure {
		return usageParts{}, false, valid
	}
	return p, true, true
}

// usageObject reads the usage object at s.i (its opening brace) into its
// parts and leaves s.i after it. valid is false when it is not well
// formed; sure is false when a count is doubtful (not a plain
// non-negative integer, or given twice under one name or two).
func (s *scanner) usageObject() (p usageParts, sure, valid bool) {
	sure = true
	s.eat('{')
	s.ws()
	if s.eat('}') {
		return p, true, true
	}
	for {
		s.ws()
		ks := s.i
		if !s.str() {
			return p, false, false
		}
		f := usageFieldOf(s.b[ks+1 : s.i-1])
		s.ws()
		if !s.eat(':') {
			return p, false, false
		}
		s.ws()
		switch {
		case f == fieldNone:
			if !s.value(1) {
				return p, false, false
			}
		case bytes.HasPrefix(s.b[s.i:], nullLiteral):
			s.i += len(nullLiteral)
		case f == fieldDetails:
			if s.i >= len(s.b) || s.b[s.i] != '{' || !p.details() {
				sure = false
				if !s.value(1) {
					return p, false, false
				}
				break
			}
			good, ok := s.detailsObject(&p)
			if !ok {
				return p, false, false
			}
			sure = sure && good
		default:
			n, good := s.count()
			if !good || !p.set(f, n) {
				sure = false
				if !s.value(1) {
					return p, false, false
				}
			}
		}
		s.ws()
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return p, false, false
		}
		return p, sure, true
	}
}

// detailsObject reads an OpenAI details object at s.i (its opening brace)
// for its cache counts (see setDetail), skipping its other members. valid
// is false when it is not well formed; sure is false when a cache count is
// doubtful.
func (s *scanner) detailsObject(p *usageParts) (sure, valid bool) {
	sure = true
	s.eat('{')
	s.ws()
	if s.eat('}') {
		return true, true
	}
	for {
		s.ws()
		ks := s.i
		if !s.str() {
			return false, false
		}
		key := s.b[ks+1 : s.i-1]
		s.ws()
		if !s.eat(':') {
			return false, false
		}
		s.ws()
		switch {
		case !isDetail(key):
			if !s.value(2) {
				return false, false
			}
		case bytes.HasPrefix(s.b[s.i:], nullLiteral):
			s.i += len(nullLiteral)
		default:
			n, good := s.count()
			if !good || !p.setDetail(key, n) {
				sure = false
				if !s.value(2) {
					return false, false
				}
			}
		}
		s.ws()
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return false, false
		}
		return sure, true
	}
}

var nullLiteral = []byte("null")

// maxCountDigits bounds a token count (no real answer has 10^15 tokens).
const maxCountDigits = 15

// count reads a non-negative integer at s.i: digits only, no sign, fraction
// or exponent, no leading zero. On failure s.i is unchanged.
func (s *scanner) count() (int64, bool) {
	j := s.i
	var n int64
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		n = n*10 + int64(s.b[j]-'0')
		j++
	}
	d := j - s.i
	if d == 0 || d > maxCountDigits || (d > 1 && s.b[s.i] == '0') {
		return 0, false
	}
	if j < len(s.b) {
		switch s.b[j] {
		case ',', '}', ' ', '\t', '\n', '\r':
		default:
			return 0, false // 1.5, 1e3, 12abc
		}
	}
	s.i = j
	return n, true
}
