package provider

import "bytes"

// Usage is the token usage an upstream reported for one answer, in OpenAI's
// terms (prompt and completion tokens). The zero value is "nothing known".
type Usage struct {
	// Prompt is the prompt (input) token count; meaningful when HasPrompt.
	Prompt int64
	// Completion is the completion (output) token count; meaningful when
	// HasCompletion. Embeddings answers report none.
	Completion int64
	// HasPrompt and HasCompletion say which counts the upstream reported.
	HasPrompt, HasCompletion bool
}

// Known reports whether any count is known.
func (u Usage) Known() bool { return u.HasPrompt || u.HasCompletion }

// UsageReporter is a StreamDecoder that knows the usage of the stream it
// decoded so far (the last usage the upstream reported).
type UsageReporter interface {
	Usage() Usage
}

var usageKey = []byte(`"usage"`)

// maxUsageCandidates bounds how many occurrences of "usage" ReadUsage looks
// at, from the end, before it gives up (a body quoting the word many times
// in nested objects gets no usage rather than an unbounded search).
const maxUsageCandidates = 4

// ReadUsage returns the top-level "usage" object of the JSON object body
// (an OpenAI-shaped answer or one SSE chunk): prompt_tokens (or
// input_tokens, plus Anthropic's cache_creation_input_tokens and
// cache_read_input_tokens) and completion_tokens (or output_tokens). It does not parse
// the body: it finds the last `"usage"` from the end, proves it is a key of
// the outermost object by scanning whichever side of it is shorter, and
// reads only that object. ok is false when there is none, when it is null,
// or when anything about it is unsure (a duplicate or non-integer count, a
// malformed object): no usage is better than wrong numbers. It does not
// allocate.
func ReadUsage(body []byte) (u Usage, ok bool) {
	end := len(body)
	for n := 0; n < maxUsageCandidates; n++ {
		i := lastIndex(body[:end], usageKey)
		if i < 0 {
			return Usage{}, false
		}
		end = i
		u, ok, definite := usageAt(body, i)
		if definite {
			return u, ok
		}
	}
	return Usage{}, false
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
func usageAt(body []byte, i int) (u Usage, ok, definite bool) {
	// Inside a string a quote is escaped by an odd run of backslashes; an
	// even run (none, outside strings) leaves it a real delimiter, and then
	// `"usage"` is a whole string token: its closing quote follows 'e'.
	n := 0
	for p := i - 1; p >= 0 && body[p] == '\\'; p-- {
		n++
	}
	if n%2 == 1 {
		return Usage{}, false, false
	}
	s := scanner{b: body, i: i + len(usageKey)}
	s.ws()
	if !s.eat(':') {
		return Usage{}, false, false // a string value, not a key
	}
	s.ws()
	u, ok, valid := s.usageValue()
	if !valid {
		return Usage{}, false, true // malformed: give up
	}
	// Prove the key is a member of the outermost object, from the nearer end.
	var top bool
	if i < len(body)-s.i {
		top = topLevelKeyAt(body, i)
	} else {
		top = s.restOfRoot()
	}
	if !top {
		return Usage{}, false, false
	}
	return u, ok, true
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
// false when the value is not well formed; ok is false for null or an
// object without a usable count.
func (s *scanner) usageValue() (u Usage, ok, valid bool) {
	if bytes.HasPrefix(s.b[s.i:], nullLiteral) {
		s.i += len(nullLiteral)
		return Usage{}, false, true
	}
	if !s.eat('{') {
		// Any other value is not a usage object: skip it, report none.
		return Usage{}, false, s.value(0)
	}
	sure := true
	// Anthropic's input_tokens leaves out the cache's: its prompt is the
	// sum of the three (OpenAI's prompt_tokens already includes cached).
	var cacheWrite, cacheRead int64
	var hasCacheWrite, hasCacheRead bool
	s.ws()
	if s.eat('}') {
		return Usage{}, false, true
	}
	for {
		s.ws()
		ks := s.i
		if !s.str() {
			return Usage{}, false, false
		}
		key := s.b[ks+1 : s.i-1]
		s.ws()
		if !s.eat(':') {
			return Usage{}, false, false
		}
		s.ws()
		var dst *int64
		var has *bool
		switch string(key) {
		case "prompt_tokens", "input_tokens":
			dst, has = &u.Prompt, &u.HasPrompt
		case "completion_tokens", "output_tokens":
			dst, has = &u.Completion, &u.HasCompletion
		case "cache_creation_input_tokens":
			dst, has = &cacheWrite, &hasCacheWrite
		case "cache_read_input_tokens":
			dst, has = &cacheRead, &hasCacheRead
		}
		switch {
		case dst == nil:
			if !s.value(1) {
				return Usage{}, false, false
			}
		case bytes.HasPrefix(s.b[s.i:], nullLiteral):
			s.i += len(nullLiteral)
		default:
			n, good := s.count()
			if !good || *has {
				// Not a plain count, or a second one (a duplicate key, or
				// both spellings): which one would the client believe?
				sure = false
				if !s.value(1) {
					return Usage{}, false, false
				}
				break
			}
			*dst, *has = n, true
		}
		s.ws()
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return Usage{}, false, false
		}
		if !sure {
			return Usage{}, false, true
		}
		if u.HasPrompt {
			u.Prompt += cacheWrite + cacheRead
		}
		return u, u.Known(), true
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
