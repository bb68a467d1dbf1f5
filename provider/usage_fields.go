package provider

// The names each provider gives the counts of a usage object, and how
// they add up to the four parts the gateway meters (docs/quotas.md,
// Cached tokens): uncached input, cache reads, cache writes and output.
// Both readers, ReadUsage over bytes and fastjsonParts over a parsed
// value, go through this table, so they cannot disagree on a name.
//
//	provider                 input            cache reads                   cache writes                  output
//	OpenAI chat/completions  prompt_tokens*   prompt_tokens_details.cached  prompt_tokens_details.write   completion_tokens
//	OpenAI Responses         input_tokens*    input_tokens_details.cached   input_tokens_details.write    output_tokens
//	Anthropic Messages       input_tokens     cache_read_input_tokens       cache_creation_input_tokens   output_tokens
//	Bedrock Converse         inputTokens      cacheReadInputTokens          cacheWriteInputTokens         outputTokens
//
// * includes the cache's tokens; the other input counts leave them out.
// In the details objects, "cached" is cached_tokens and "write"
// cache_write_tokens (the OpenAI SDK's CacheWriteTokens; OpenAI reports
// and bills cache writes for its newer models).

// usageField is what one member of a usage object counts.
type usageField uint8

const (
	fieldNone usageField = iota
	// fieldPrompt is OpenAI's prompt_tokens: every input token, cached
	// ones included.
	fieldPrompt
	// fieldInput is input_tokens: Anthropic's leaves the cache's tokens
	// out, the Responses API's includes them; the object's cache fields
	// tell which (see usageParts.resolve).
	fieldInput
	// fieldInputUncached is Bedrock's inputTokens: cache tokens left out.
	fieldInputUncached
	// fieldOutput is the output count, reasoning included.
	fieldOutput
	// fieldCacheRead and fieldCacheWrite are counts beside the input.
	fieldCacheRead
	fieldCacheWrite
	// fieldDetails is OpenAI's details object, whose cached_tokens is a
	// part of the input count.
	fieldDetails
)

// usageFieldOf returns what the usage member named key counts.
func usageFieldOf(key []byte) usageField {
	switch string(key) {
	case "prompt_tokens":
		return fieldPrompt
	case "input_tokens":
		return fieldInput
	case "inputTokens":
		return fieldInputUncached
	case "completion_tokens", "output_tokens", "outputTokens":
		return fieldOutput
	case "cache_read_input_tokens", "cacheReadInputTokens":
		return fieldCacheRead
	case "cache_creation_input_tokens", "cacheWriteInputTokens":
		return fieldCacheWrite
	case "prompt_tokens_details", "input_tokens_details":
		return fieldDetails
	}
	return fieldNone
}

// The details object's counts: cached (read) and cache-written input.
const (
	cachedTokensKey     = "cached_tokens"
	cacheWriteTokensKey = "cache_write_tokens"
)

// Bits of usageParts.has.
const (
	hasInput uint8 = 1 << iota
	hasOutput
	hasCacheRead
	hasCacheWrite
	hasCached
	hasDetailWrite
	hasDetails
)

// usageParts is one usage object's counts as the provider named them,
// before they are added up: each with whether it was present (a null
// count is absent). The zero value has nothing.
type usageParts struct {
	input, output, cacheRead, cacheWrite int64
	// cached and detailWrite are a details object's counts, parts of
	// the input count.
	cached, detailWrite int64
	// inputField is the input count's field (fieldPrompt, fieldInput or
	// fieldInputUncached) when hasInput.
	inputField usageField
	has        uint8
}

// set records count n of field f (not fieldDetails: see setCached). It
// reports false for a second count of the same field, under the same name
// or another: which one would the client believe?
func (p *usageParts) set(f usageField, n int64) bool {
	var dst *int64
	var bit uint8
	switch f {
	case fieldPrompt, fieldInput, fieldInputUncached:
		dst, bit = &p.input, hasInput
		p.inputField = f
	case fieldOutput:
		dst, bit = &p.output, hasOutput
	case fieldCacheRead:
		dst, bit = &p.cacheRead, hasCacheRead
	case fieldCacheWrite:
		dst, bit = &p.cacheWrite, hasCacheWrite
	default:
		return true
	}
	if p.has&bit != 0 {
		return false
	}
	*dst = n
	p.has |= bit
	return true
}

// details records that a details object was read (false: a second one).
func (p *usageParts) details() bool {
	if p.has&hasDetails != 0 {
		return false
	}
	p.has |= hasDetails
	return true
}

// setDetail records the details object's count named key (false: twice);
// other keys are ignored.
func (p *usageParts) setDetail(key []byte, n int64) bool {
	dst, bit := &p.cached, hasCached
	switch string(key) {
	case cachedTokensKey:
	case cacheWriteTokensKey:
		dst, bit = &p.detailWrite, hasDetailWrite
	default:
		return true
	}
	if p.has&bit != 0 {
		return false
	}
	*dst = n
	p.has |= bit
	return true
}

// isDetail reports whether a details object's member key is counted.
func isDetail(key []byte) bool {
	return string(key) == cachedTokensKey || string(key) == cacheWriteTokensKey
}

// overlay replaces the counts of p that q has, keeping the others: a
// stream's later usage event repeats what changed (Anthropic's
// message_delta overwrites count by count, as its SDK accumulates them).
func (p *usageParts) overlay(q usageParts) {
	if q.has&hasInput != 0 {
		p.input, p.inputField = q.input, q.inputField
	}
	if q.has&hasOutput != 0 {
		p.output = q.output
	}
	if q.has&hasCacheRead != 0 {
		p.cacheRead = q.cacheRead
	}
	if q.has&hasCacheWrite != 0 {
		p.cacheWrite = q.cacheWrite
	}
	if q.has&hasCached != 0 {
		p.cached = q.cached
	}
	if q.has&hasDetailWrite != 0 {
		p.detailWrite = q.detailWrite
	}
	p.has |= q.has
}

// resolve adds the counts up into a Usage. ok is false when no count is
// known or the counts contradict each other (cache counts larger than the
// input they are part of, details beside Anthropic's cache fields on an
// input_tokens that then means two things, one count given differently
// under two names): no usage is better than wrong numbers. The cache
// counts without an input count are dropped with it (the input is then
// unknown).
func (p usageParts) resolve() (u Usage, ok bool) {
	if p.has&hasOutput != 0 {
		u.Completion, u.HasCompletion = p.output, true
	}
	if p.has&hasInput == 0 {
		return u, u.HasCompletion
	}
	additive := p.has&(hasCacheRead|hasCacheWrite) != 0
	details := p.has&(hasCached|hasDetailWrite) != 0
	switch p.inputField {
	case fieldPrompt:
		// OpenAI's prompt_tokens holds everything. A server that also
		// writes Anthropic's names (LiteLLM does) names parts of it.
		cr, ok1 := either(p.has&hasCached != 0, p.cached, p.has&hasCacheRead != 0, p.cacheRead)
		cw, ok2 := either(p.has&hasDetailWrite != 0, p.detailWrite, p.has&hasCacheWrite != 0, p.cacheWrite)
		if !ok1 || !ok2 || cr+cw > p.input {
			return Usage{}, false
		}
		u.Prompt, u.CacheRead, u.CacheWrite = p.input, cr, cw
	case fieldInput:
		switch {
		case details && additive:
			return Usage{}, false
		case details: // the Responses API: input_tokens includes them
			if p.cached+p.detailWrite > p.input {
				return Usage{}, false
			}
			u.Prompt, u.CacheRead, u.CacheWrite = p.input, p.cached, p.detailWrite
		default: // Anthropic: input_tokens leaves them out
			u.Prompt = p.input + p.cacheRead + p.cacheWrite
			u.CacheRead, u.CacheWrite = p.cacheRead, p.cacheWrite
		}
	default: // fieldInputUncached: Bedrock
		if details {
			return Usage{}, false
		}
		u.Prompt = p.input + p.cacheRead + p.cacheWrite
		u.CacheRead, u.CacheWrite = p.cacheRead, p.cacheWrite
	}
	u.HasPrompt = true
	return u, true
}

// either returns the count given under one of two names: a when hasA, b
// when hasB, 0 when neither; ok is false when both are given and differ.
func either(hasA bool, a int64, hasB bool, b int64) (n int64, ok bool) {
	switch {
	case hasA && hasB:
		return a, a == b
	case hasA:
		return a, true
	case hasB:
		return b, true
	}
	return 0, true
}
