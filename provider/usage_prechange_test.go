package provider

// The usage reader as it stood at commit 9a32d2e (prompt and completion
// only, Anthropic's cache counts added into the prompt), kept as the
// twin of the four-part reader in the benchmarks of usage_timing_test.go.

import "bytes"

// readUsagePreChange is ReadUsage at commit 9a32d2e.
func readUsagePreChange(body []byte) (u Usage, ok bool) {
	end := len(body)
	for n := 0; n < maxUsageCandidates; n++ {
		i := lastIndex(body[:end], usageKey)
		if i < 0 {
			return Usage{}, false
		}
		end = i
		u, ok, definite := usageAtPreChange(body, i)
		if definite {
			return u, ok
		}
	}
	return Usage{}, false
}

// usageAtPreChange is usageAt at commit 9a32d2e.
func usageAtPreChange(body []byte, i int) (u Usage, ok, definite bool) {
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
	u, ok, valid := s.usageValuePreChange()
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

// usageValuePreChange is scanner.usageValue at commit 9a32d2e.
func (s *scanner) usageValuePreChange() (u Usage, ok, valid bool) {
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
