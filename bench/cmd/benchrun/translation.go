package main

import (
	"fmt"
	"strings"
)

// Translation rows: the same conversation sent as a chat request (native:
// the body passes through to the OpenAI-compatible mock) and as a Messages
// request to an openai target or a Responses request to a gemini target
// (both speak chat to the mock), which the gateway translates to chat and
// the answer back (docs/providers.md, Translation). The targets: a translated request's
// CPU at most 1.3× the native row's, a translated stream's CPU per upstream
// event at most 1.5× the native stream's.
const (
	targetTranslatedRequest = 1.3
	targetTranslatedStream  = 1.5
)

// translationRows measures the translated surfaces against native chat on
// 1 KB and 16 KB conversations, and their streams.
func (b *bench) translationRows() {
	var pairs [][2]*row
	for _, n := range []int{1 << 10, 16 << 10} {
		suffix := fmt.Sprintf(", %d KB conversation", n>>10)
		g := &group{b: b, mock: b.primary.addr}
		native := g.add(rowSy1+", chat native"+suffix, chatBodyOfSize(n), b.direct, nil, b.oneRuleOn(b.primary.addr, "openai")).row
		for _, s := range []struct{ name, path, provider string }{
			{"Switchyard, messages → chat (openai)", "/v1/messages", "openai"},
			{"Switchyard, responses → chat (gemini)", "/v1/responses", "gemini"},
		} {
			c := g.add(s.name+suffix, translatedBody(s.path, n, false), b.direct, nil, b.oneRuleOn(b.primary.addr, s.provider))
			c.url = strings.TrimSuffix(c.url, chatPath) + s.path
			pairs = append(pairs, [2]*row{c.row, native})
		}
		b.compare(g)
	}
	g := &group{b: b, mock: b.streamer.addr, stream: true}
	native := g.add(rowSy1+", chat native (SSE)", streamBody, nil, nil, b.oneRuleOn(b.streamer.addr, "openai")).row
	for _, s := range []struct{ name, path, provider string }{
		{"Switchyard, messages → chat (openai) (SSE)", "/v1/messages", "openai"},
		{"Switchyard, responses → chat (gemini) (SSE)", "/v1/responses", "gemini"},
	} {
		c := g.add(s.name, translatedBody(s.path, 0, true), nil, nil, b.oneRuleOn(b.streamer.addr, s.provider))
		c.url = strings.TrimSuffix(c.url, chatPath) + s.path
		pairs = append(pairs, [2]*row{c.row, native})
	}
	b.compare(g)
	b.sections = append(b.sections, translationSection(pairs))
}

// oneRuleOn starts the 1-rule Switchyard in front of the mock at addr, its
// target of provider (openai serves the Responses API natively: gemini,
// which does not, has it translated).
func (b *bench) oneRuleOn(addr, provider string) func() (*proxy, error) {
	c := oneRule(addr)
	c.provider = provider
	return func() (*proxy, error) { return b.switchyard(c) }
}

// translatedBody is the conversation of chatBodyOfSize(n) (n 0: streamBody's
// one turn) as a Messages or Responses request.
func translatedBody(path string, n int, stream bool) []byte {
	system := `You are a careful coding assistant.\nAnswer in Markdown.`
	var turns []string
	if n == 0 {
		turns = []string{"Say hello"}
	} else {
		prose := "The gateway reads the request body once, routes on four fields, and forwards the bytes untouched. "
		code := `func route(b []byte) error {\n\tif len(b) == 0 {\n\t\treturn errEmpty\n\t}\n\treturn nil\n}\n`
		size := 0
		for i := 0; size < n-160; i++ {
			t := fmt.Sprintf(`%sAs the operator said, \"pin it\" (turn %d).\n%s`, strings.Repeat(prose, 4), i, strings.Repeat(code, 3))
			turns = append(turns, t)
			size += len(t) + 40
		}
	}
	var s strings.Builder
	role := func(i int) string { return [2]string{"user", "assistant"}[i%2] }
	if len(turns)%2 == 0 { // end on a user turn
		turns = turns[:len(turns)-1]
	}
	if path == "/v1/messages" {
		fmt.Fprintf(&s, `{"model":"bench-model","max_tokens":256,"system":"%s","messages":[`, system)
		for i, t := range turns {
			if i > 0 {
				s.WriteByte(',')
			}
			fmt.Fprintf(&s, `{"role":%q,"content":"%s"}`, role(i), t)
		}
	} else {
		fmt.Fprintf(&s, `{"model":"bench-model","max_output_tokens":256,"instructions":"%s","input":[`, system)
		for i, t := range turns {
			if i > 0 {
				s.WriteByte(',')
			}
			fmt.Fprintf(&s, `{"role":%q,"content":"%s"}`, role(i), t)
		}
	}
	s.WriteString("]")
	if stream {
		s.WriteString(`,"stream":true`)
	}
	s.WriteString("}")
	return []byte(s.String())
}

// translationSection compares each translated row with its native twin.
func translationSection(pairs [][2]*row) string {
	t := &table{head: []string{"translated vs native", "CPU/req (or per stream)", "native", "ratio", "target", "allocs/req (or per stream)", "native allocs"}}
	for _, p := range pairs {
		tr, nat := p[0], p[1]
		if tr.res == nil || nat.res == nil || !tr.used || !nat.used || tr.lost || nat.lost {
			t.add(tr.name, "not measured")
			continue
		}
		cpu := func(r *row) float64 { return r.use.cpu / r.requests() * 1e6 }
		allocs := func(r *row) float64 { return r.use.mallocs / r.requests() }
		target := targetTranslatedRequest
		per, trAllocs, natAllocs := "", fmt.Sprintf("%.1f", allocs(tr)), fmt.Sprintf("%.1f", allocs(nat))
		if tr.stream {
			target = targetTranslatedStream
			per = fmt.Sprintf(" (%.2f µs per upstream event)", cpu(tr)/streamEvents)
			trAllocs += fmt.Sprintf(" (%.2f per event)", allocs(tr)/streamEvents)
			natAllocs += fmt.Sprintf(" (%.2f per event)", allocs(nat)/streamEvents)
		}
		ratio := cpu(tr) / cpu(nat)
		verdict := "pass"
		if ratio > target {
			verdict = "**miss**"
		}
		t.add(tr.name, fmt.Sprintf("%.1f µs%s", cpu(tr), per), fmt.Sprintf("%.1f µs", cpu(nat)),
			fmt.Sprintf("%.2f× %s", ratio, verdict), fmt.Sprintf("≤ %.1f×", target),
			trAllocs, natAllocs)
	}
	return "## Translation\n\nThe same conversation as a native chat request and as a Messages or Responses request that the gateway translates to chat for the OpenAI-compatible mock and back (docs/providers.md, Translation); streams of " +
		fmt.Sprint(streamEvents) + " upstream chat chunks. CPU and allocations per request (per stream for SSE) from the proxy, measured in alternation with the native row.\n\n" + t.String()
}
