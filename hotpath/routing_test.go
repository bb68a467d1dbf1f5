package hotpath

import (
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// routingConfig has one rule per condition key over five openai targets
// (b is anthropic). a is the fallback and serves only a few exact models.
const routingConfig = `
server:
  request_timeout: 5s
strategy:
  mode: conditional
  conditions:
    - key: model          # 0
      value: gpt-4o
      target_key: a
    - key: model_prefix   # 1
      value: claude-
      target_keys: [b, c]
    - key: user           # 2
      value: vip
      target_key: c
    - key: metadata       # 3
      field: tier
      value: gold
      target_key: d
    - key: stream         # 4
      value: "true"
      target_key: e
    - key: has_tools      # 5
      value: "true"
      target_key: d
    - key: metadata       # 6
      field: n
      value: "1.0"
      target_key: c
    - key: model          # 7
      value: sonnet
      target_key: b
targets:
  - virtual_key: a
    provider: openai
    base_url: {{a}}
    api_key: sk-a
    models: [gpt-4o, base-model, text-embedding-3-small, dall-e-3]
    model_map: {base-model: base-model-2024}
  - virtual_key: b
    provider: anthropic
    base_url: {{b}}
    api_key: sk-b
    models: ["claude-*", sonnet]
  - virtual_key: c
    provider: openai
    base_url: {{c}}
    api_key: sk-c
    models: ["claude-*", "m-*"]
  - virtual_key: d
    provider: openai
    base_url: {{d}}
    api_key: sk-d
  - virtual_key: e
    provider: openai
    base_url: {{e}}
    api_key: sk-e
`

func fiveMocks(t *testing.T) []*mockUpstream {
	return []*mockUpstream{startMock(t, "a"), startMock(t, "b"), startMock(t, "c"), startMock(t, "d"), startMock(t, "e")}
}

// callCounts returns the call count of each mock.
func callCounts(ms []*mockUpstream) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.calls.Load()
	}
	return out
}

// calledSince names the mocks whose count grew since before.
func calledSince(ms []*mockUpstream, before []int64) string {
	var names []string
	for i, m := range ms {
		for n := m.calls.Load() - before[i]; n > 0; n-- {
			names = append(names, m.name)
		}
	}
	return strings.Join(names, ",")
}

func TestRoutingReachesTheNamedTarget(t *testing.T) {
	ms := fiveMocks(t)
	tg := startGateway(t, routingConfig, ms...)
	const chat, emb = "/v1/chat/completions", "/v1/embeddings"
	for _, c := range []struct {
		name, path, body, meta string
		rule, target           string
	}{
		{"exact model", chat, `{"model":"gpt-4o"}`, "", "0", "a"},
		// b (anthropic) is first in [b, c] and serves the model on chat, so
		// it alone is called (the mock answers its /v1/messages with a 404,
		// which is not failover-safe).
		{"prefix, first chain member", chat, `{"model":"claude-3-5","messages":[{"role":"user","content":"hi"}]}`, "", "1", "b"},
		{"user", chat, `{"model":"m-1","user":"vip"}`, "", "2", "c"},
		{"user mismatch falls through to fallback", chat, `{"model":"base-model","user":"nobody"}`, "", "fallback", "a"},
		{"metadata string", chat, `{"model":"m-1"}`, `{"tier":"gold"}`, "3", "d"},
		{"metadata on completions", "/v1/completions", `{"model":"m-1","prompt":"x"}`, `{"tier":"gold"}`, "3", "d"},
		{"stream", chat, `{"model":"m-1","stream":true}`, "", "4", "e"},
		{"tools", chat, `{"model":"m-1","tools":[{}]}`, "", "5", "d"},
		{"metadata number as written", chat, `{"model":"m-1"}`, `{"n":1.0}`, "6", "c"},
		{"unmatched goes to targets[0]", chat, `{"model":"base-model"}`, "", "fallback", "a"},
		{"embeddings ignore metadata and stream", emb, `{"model":"text-embedding-3-small","input":"x","stream":true}`, `{"tier":"gold"}`, "fallback", "a"},
		{"embeddings ignore a malformed header", emb, `{"model":"text-embedding-3-small","input":"x"}`, `{"tier":{"nested":1}}`, "fallback", "a"},
		{"images ignore tools", "/v1/images/generations", `{"model":"dall-e-3","prompt":"x","tools":[1]}`, "", "fallback", "a"},
	} {
		before := callCounts(ms)
		hdr := []string{"Authorization", "Bearer client-key", "X-Client-Key", "kept"}
		if c.meta != "" {
			hdr = append(hdr, "X-Gateway-Metadata", c.meta)
		}
		r := tg.do("POST", c.path, c.body, hdr...)
		if got := calledSince(ms, before); got != c.target {
			t.Errorf("%s: upstreams called %q, want %q (status %d %s)", c.name, got, c.target, r.Status, r.Body)
			continue
		}
		if r.Header["X-Gateway-Rule"] != c.rule {
			t.Errorf("%s: X-Gateway-Rule %q, want %q", c.name, r.Header["X-Gateway-Rule"], c.rule)
		}
		if r.Header["X-Gateway-Target"] != c.target || r.Header["X-Gateway-Attempts"] != "1" {
			t.Errorf("%s: attribution target=%q attempts=%q", c.name, r.Header["X-Gateway-Target"], r.Header["X-Gateway-Attempts"])
		}
		if r.Header["X-Request-Id"] == "" {
			t.Errorf("%s: no X-Request-Id", c.name)
		}
		if c.target == "b" {
			continue // the anthropic mock speaks OpenAI; its answer is not checked here
		}
		if r.Status != 200 || !strings.Contains(r.Body, "from "+c.target) && !strings.Contains(r.Body, c.target+".png") &&
			!strings.Contains(r.Body, `"embedding"`) {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Body)
		}
	}
	// Secrets: the client's key and the metadata header never reach an
	// upstream; the target's own key does.
	for _, m := range ms {
		for _, req := range m.requests() {
			if strings.Contains(req.Auth, "client-key") || req.Metadata != "" {
				t.Errorf("upstream %s saw Authorization %q, X-Gateway-Metadata %q", m.name, req.Auth, req.Metadata)
			}
			if m.name != "b" && req.Auth != "Bearer sk-"+m.name {
				t.Errorf("upstream %s saw Authorization %q, want its own key", m.name, req.Auth)
			}
		}
	}
}

func TestRoutingModelMapAndBodyPassThrough(t *testing.T) {
	ms := fiveMocks(t)
	tg := startGateway(t, routingConfig, ms...)
	body := `{"model":"gpt-4o", "messages":[{"role":"user","content":"héllo \u00e9"}],"temperature":0.5}`
	r := tg.do("POST", "/v1/chat/completions", body)
	if r.Status != 200 || r.Header["X-Gateway-Model"] != "gpt-4o" || r.Header["X-Gateway-Provider"] != "openai" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	if got := ms[0].requests(); len(got) != 1 || got[0].Body != body || got[0].Path != "/v1/chat/completions" {
		t.Fatalf("upstream saw %+v, want the body byte for byte", got)
	}
	r = tg.do("POST", "/v1/chat/completions", `{"model":"base-model"}`)
	if r.Status != 200 || r.Header["X-Gateway-Model"] != "base-model-2024" {
		t.Fatalf("model_map: %d X-Gateway-Model=%q", r.Status, r.Header["X-Gateway-Model"])
	}
	if got := ms[0].requests(); len(got) != 2 || !strings.Contains(got[1].Body, `"base-model-2024"`) {
		t.Fatalf("model_map: upstream saw %+v", got)
	}
}

func TestRoutingRefusesModelsTheChainDoesNotServe(t *testing.T) {
	ms := fiveMocks(t)
	tg := startGateway(t, routingConfig, ms...)
	notFound := func(model string) string {
		return envelope("model "+strconv.Quote(model)+" is not served by the targets this request routes to",
			"invalid_request_error", "model_not_found")
	}
	for _, c := range []struct {
		name, path, body, meta, rule, want string
		status                             int
	}{
		// d and e serve any model, but the fallback chain is [a] alone.
		{"fallback does not serve it", "/v1/chat/completions", `{"model":"m-1"}`, "", "fallback", notFound("m-1"), 404},
		// 1 is not 1.0: the rule does not match, and a does not serve m-1.
		{"metadata 1 vs 1.0", "/v1/chat/completions", `{"model":"m-1"}`, `{"n":1}`, "fallback", notFound("m-1"), 404},
		// The user rule names c, which does not serve gpt-5 (a would).
		{"rule chain does not serve it", "/v1/chat/completions", `{"model":"x-9","user":"vip"}`, "", "2", notFound("x-9"), 404},
		// sonnet routes to b (anthropic), which serves the model but not
		// embeddings; d and e would.
		{"unsupported endpoint", "/v1/embeddings", `{"model":"sonnet","input":"x"}`, "", "7",
			envelope(`model "sonnet" is not served on /v1/embeddings by the targets this request routes to`,
				"invalid_request_error", "unsupported_endpoint"), 404},
	} {
		hdr := []string{}
		if c.meta != "" {
			hdr = append(hdr, "X-Gateway-Metadata", c.meta)
		}
		r := tg.do("POST", c.path, c.body, hdr...)
		wantResponse(t, c.name, r, c.status, c.want)
		if r.Header["X-Gateway-Rule"] != c.rule {
			t.Errorf("%s: X-Gateway-Rule %q, want %q", c.name, r.Header["X-Gateway-Rule"], c.rule)
		}
	}
	for _, m := range ms {
		if n := m.calls.Load(); n != 0 {
			t.Errorf("upstream %s got %d calls", m.name, n)
		}
	}
}

func TestMetadataHeaderErrors(t *testing.T) {
	ms := fiveMocks(t)
	tg := startGateway(t, routingConfig, ms...)
	bad := func(msg string) string { return envelope(msg, "invalid_request_error", "invalid_request") }
	entries := func(n int) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"k` + strconv.Itoa(i) + `":"v"`)
		}
		b.WriteByte('}')
		return b.String()
	}
	long := `{"k":"` + strings.Repeat("x", 4097-8) + `"}`
	if len(long) != 4097 {
		t.Fatalf("long header is %d bytes", len(long))
	}
	for _, c := range []struct{ name, meta, want string }{
		{"33 entries", entries(33), bad("X-Gateway-Metadata: 33 entries is too many; at most 32 allowed")},
		{"4097 bytes", long, bad("X-Gateway-Metadata: 4097 bytes is too long; at most 4096 allowed")},
		{"nested", `{"tier":{"a":1}}`, bad(`X-Gateway-Metadata: value of "tier" must be a string, number or boolean, not an object`)},
		{"array value", `{"tier":[1]}`, bad(`X-Gateway-Metadata: value of "tier" must be a string, number or boolean, not an array`)},
		{"null value", `{"tier":null}`, bad(`X-Gateway-Metadata: value of "tier" must be a string, number or boolean, not null`)},
		{"not an object", `["tier"]`, bad(`X-Gateway-Metadata: must be a JSON object, not an array`)},
	} {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
			wantResponse(t, c.name+" on "+path, tg.do("POST", path, `{"model":"m-1"}`, "X-Gateway-Metadata", c.meta), 400, c.want)
		}
	}
	r := tg.do("POST", "/v1/chat/completions", `{"model":"m-1"}`, "X-Gateway-Metadata", `{"tier":"gold"} x`)
	if r.Status != 400 || !strings.HasPrefix(r.Body, `{"error":{"message":"X-Gateway-Metadata: must be a single JSON object: `) {
		t.Errorf("trailing bytes: %d %s", r.Status, r.Body)
	}
	// 32 entries in 4096 bytes is fine.
	if r := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o"}`, "X-Gateway-Metadata", entries(32)); r.Status != 200 {
		t.Errorf("32 entries: %d %s", r.Status, r.Body)
	}
	// A malformed body is reported before a malformed header.
	wantResponse(t, "body first", tg.do("POST", "/v1/chat/completions", `{"model":5}`, "X-Gateway-Metadata", `{"tier":null}`),
		400, bad(`"model" must be a string, not a number`))
	// Ignored, never validated, on embeddings and images.
	for _, path := range []string{"/v1/embeddings", "/v1/images/generations"} {
		model := "text-embedding-3-small"
		if strings.Contains(path, "images") {
			model = "dall-e-3"
		}
		if r := tg.do("POST", path, `{"model":"`+model+`","input":"x","prompt":"x"}`, "X-Gateway-Metadata", entries(40)); r.Status != 200 {
			t.Errorf("%s with a bad header: %d %s", path, r.Status, r.Body)
		}
	}
	if n := ms[0].calls.Load(); n != 3 {
		t.Errorf("upstream a got %d calls, want 3", n)
	}
}

func TestRequestIDEchoedOrGenerated(t *testing.T) {
	ms := fiveMocks(t)
	tg := startGateway(t, routingConfig, ms...)
	r := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o"}`, "X-Request-Id", "client-id-1")
	if r.Header["X-Request-Id"] != "client-id-1" {
		t.Errorf("echo: %q", r.Header["X-Request-Id"])
	}
	r1 := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o"}`)
	r2 := tg.do("POST", "/v1/chat/completions", `{"model":"nope"}`)
	id1, id2 := r1.Header["X-Request-Id"], r2.Header["X-Request-Id"]
	if len(id1) != 29 || id1 == id2 || id1[:13] != id2[:13] {
		t.Errorf("generated ids %q %q: want 29 chars, distinct, one process prefix", id1, id2)
	}
	r = tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o"}`, "X-Request-Id", strings.Repeat("x", 129))
	if len(r.Header["X-Request-Id"]) != 29 {
		t.Errorf("overlong client id not replaced: %q", r.Header["X-Request-Id"])
	}
}

// A client X-Request-Id with bytes outside visible ASCII (CR/LF, other
// controls, spaces, non-ASCII) is never echoed or forwarded: a generated id
// replaces it on the response and on the request the walk forwards.
func TestRequestIDWithUnsafeBytesReplaced(t *testing.T) {
	for _, id := range []string{"a\r\nX-Injected: 1", "a\nb", "a\rb", "esc\x1b[31m", "tab\tid", "sp ace", "caf\xc3\xa9", "nul\x00"} {
		var rc fasthttp.RequestCtx
		rc.Request.Header.Set("X-Request-Id", id)
		var h head
		h.scan(&rc.Request.Header)
		h.setRequestID(&rc)
		got := string(rc.Response.Header.Peek("X-Request-Id"))
		if got == id || len(got) != 29 || string(h.id) != got {
			t.Errorf("client id %q: response %q, kept %q; want one generated id on both", id, got, h.id)
		}
	}
	for _, id := range []string{"client-id-1", "6f1e2c1a-8d9b-4b7e-9d1f-0b9a4f3c2e11", "a/b:c=d~!", strings.Repeat("z", 128)} {
		var rc fasthttp.RequestCtx
		rc.Request.Header.Set("X-Request-Id", id)
		var h head
		h.scan(&rc.Request.Header)
		h.setRequestID(&rc)
		if got := string(rc.Response.Header.Peek("X-Request-Id")); got != id || string(h.id) != id {
			t.Errorf("valid client id %q echoed as %q, kept %q", id, got, h.id)
		}
	}
	// Through the gateway: the upstream sees the answer's id, never the
	// client's unsafe one.
	ms := fiveMocks(t)
	tg := startGateway(t, routingConfig, ms...)
	for i, id := range []string{"sp ace", "tab\tid", "caf\xc3\xa9", "client-id-2"} {
		r := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o","user":"u`+strconv.Itoa(i)+`"}`, "X-Request-Id", id)
		got := r.Header["X-Request-Id"]
		if r.Status != 200 || (id == "client-id-2") != (got == id) || (got != id && len(got) != 29) {
			t.Errorf("client id %q: %d, answer's id %q", id, r.Status, got)
		}
		var fwd []string
		for _, m := range ms {
			for _, q := range m.requests() {
				if strings.Contains(q.Body, `"u`+strconv.Itoa(i)+`"`) {
					fwd = append(fwd, q.RequestID)
				}
			}
		}
		if len(fwd) != 1 || fwd[0] != got {
			t.Errorf("client id %q: upstream saw %q, the answer carries %q", id, fwd, got)
		}
	}
}
