package quota

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// Rate-limit header names: OpenAI's, and Anthropic's for the messages
// surface (real SDKs and Claude Code read them).
var (
	oaiLimit     = [2][]byte{[]byte("x-ratelimit-limit-requests"), []byte("x-ratelimit-limit-tokens")}
	oaiRemaining = [2][]byte{[]byte("x-ratelimit-remaining-requests"), []byte("x-ratelimit-remaining-tokens")}
	oaiReset     = [2][]byte{[]byte("x-ratelimit-reset-requests"), []byte("x-ratelimit-reset-tokens")}
	antLimit     = [2][]byte{[]byte("anthropic-ratelimit-requests-limit"), []byte("anthropic-ratelimit-tokens-limit")}
	antRemaining = [2][]byte{[]byte("anthropic-ratelimit-requests-remaining"), []byte("anthropic-ratelimit-tokens-remaining")}
	antReset     = [2][]byte{[]byte("anthropic-ratelimit-requests-reset"), []byte("anthropic-ratelimit-tokens-reset")}
)

// SetHeaders sets the rate-limit headers of key s's rates from res (the
// check just made, admitted or refused, or the room left beside a request
// too large ever to fit) on h: OpenAI's, or Anthropic's
// when anthropic is set. now dates Anthropic's RFC 3339 resets.
func SetHeaders(h *fasthttp.ResponseHeader, s *Subject, res *Reservation, anthropic bool, now time.Time) {
	var buf [64]byte
	for k := RequestsPerMinute; k <= TokensPerMinute; k++ {
		lim := s.Limit[k]
		if lim <= 0 {
			continue
		}
		remaining, reset := res.Remaining[k], res.Reset[k]
		if !res.OK && !res.TooLarge {
			// (A request too large took nothing: res holds the room left.)
			remaining = 0
			if res.Denied == k {
				reset = res.RetryAfter
			}
		}
		names := [3][]byte{oaiLimit[k], oaiRemaining[k], oaiReset[k]}
		if anthropic {
			names = [3][]byte{antLimit[k], antRemaining[k], antReset[k]}
		}
		h.SetBytesKV(names[0], strconv.AppendInt(buf[:0], lim, 10))
		h.SetBytesKV(names[1], strconv.AppendInt(buf[:0], max(remaining, 0), 10))
		if anthropic {
			h.SetBytesKV(names[2], now.Add(reset).UTC().Truncate(time.Second).AppendFormat(buf[:0], time.RFC3339))
		} else {
			h.SetBytesKV(names[2], AppendDuration(buf[:0], reset))
		}
	}
}

// AppendDuration appends d rounded up to whole seconds as Go prints it:
// "0s", "1s", "6m0s", "1h0m0s".
func AppendDuration(b []byte, d time.Duration) []byte {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 0 {
		s = 0
	}
	if h := s / 3600; h > 0 {
		b = strconv.AppendInt(b, h, 10)
		b = append(b, 'h')
		b = strconv.AppendInt(b, s%3600/60, 10)
		b = append(b, 'm')
	} else if m := s / 60; m > 0 {
		b = strconv.AppendInt(b, m, 10)
		b = append(b, 'm')
	}
	b = strconv.AppendInt(b, s%60, 10)
	return append(b, 's')
}

// RetryAfterSeconds is the Retry-After value for a wait: whole seconds,
// rounded up, at least 1.
func RetryAfterSeconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}
