package mock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func startMock(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type reply struct {
	status int
	header map[string]string
	body   []byte
	err    error
}

func do(t *testing.T, s *Server, method, path, body string, hdr ...string) reply {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + s.Addr() + path)
	req.Header.SetMethod(method)
	req.SetBodyString(body)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	err := fasthttp.DoTimeout(req, resp, 5*time.Second)
	r := reply{status: resp.StatusCode(), body: append([]byte(nil), resp.Body()...), err: err, header: map[string]string{}}
	for _, k := range []string{"X-Mock-Name", "Retry-After", "Content-Type"} {
		r.header[k] = string(resp.Header.Peek(k))
	}
	return r
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	return m
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(string(body), "\n\n") {
		if ev == "" {
			continue
		}
		if !strings.HasPrefix(ev, "data: ") {
			t.Fatalf("event %q lacks data: prefix", ev)
		}
		out = append(out, strings.TrimPrefix(ev, "data: "))
	}
	return out
}

func TestChatCompletionJSON(t *testing.T) {
	s := startMock(t, Options{Name: "alpha", ResponseBytes: 100})
	r := do(t, s, "POST", "/v1/chat/completions", `{"model":"gpt-4o-2024-08-06","messages":[{"role":"user","content":"hi"}]}`)
	if r.err != nil || r.status != 200 {
		t.Fatalf("status %d err %v body %s", r.status, r.err, r.body)
	}
	if r.header["X-Mock-Name"] != "alpha" || r.header["Content-Type"] != "application/json" {
		t.Fatalf("headers %v", r.header)
	}
	m := decode(t, r.body)
	if m["object"] != "chat.completion" || m["model"] != "gpt-4o-2024-08-06" || m["system_fingerprint"] != "alpha" {
		t.Fatalf("body %s", r.body)
	}
	msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["role"] != "assistant" || len(msg["content"].(string)) != 100 {
		t.Fatalf("message %v", msg)
	}
	if u := m["usage"].(map[string]any); u["total_tokens"].(float64) != u["prompt_tokens"].(float64)+u["completion_tokens"].(float64) {
		t.Fatalf("usage %v", u)
	}
}

func TestChatCompletionStream(t *testing.T) {
	s := startMock(t, Options{Name: "beta", StreamEvents: 5, StreamInterval: 2 * time.Millisecond, ResponseBytes: 50})
	start := time.Now()
	r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m1","stream":true}`)
	if took := time.Since(start); took < 8*time.Millisecond {
		t.Fatalf("5 events 2ms apart took only %v", took)
	}
	if r.status != 200 || r.header["Content-Type"] != "text/event-stream" {
		t.Fatalf("status %d headers %v", r.status, r.header)
	}
	evs := sseEvents(t, r.body)
	if len(evs) != 6 || evs[5] != "[DONE]" {
		t.Fatalf("want 5 chunks + [DONE], got %d: %q", len(evs), evs)
	}
	var text strings.Builder
	for i, e := range evs[:5] {
		m := decode(t, []byte(e))
		if m["object"] != "chat.completion.chunk" || m["model"] != "m1" || m["system_fingerprint"] != "beta" {
			t.Fatalf("chunk %d: %s", i, e)
		}
		ch := m["choices"].([]any)[0].(map[string]any)
		delta := ch["delta"].(map[string]any)
		if (i == 0) != (delta["role"] == "assistant") {
			t.Fatalf("chunk %d role %v", i, delta["role"])
		}
		text.WriteString(delta["content"].(string))
		if want := i == 4; want != (ch["finish_reason"] == "stop") {
			t.Fatalf("chunk %d finish_reason %v", i, ch["finish_reason"])
		}
	}
	if text.Len() != 50 {
		t.Fatalf("streamed text is %d bytes, want 50", text.Len())
	}
}

func TestOtherSurfaces(t *testing.T) {
	s := startMock(t, Options{Name: "gamma", ResponseBytes: 32, Models: []string{"a", "b"}, StreamEvents: 2})

	m := decode(t, do(t, s, "POST", "/v1/completions", `{"model":"davinci","prompt":"x"}`).body)
	if m["object"] != "text_completion" || m["model"] != "davinci" || m["choices"].([]any)[0].(map[string]any)["text"] == "" {
		t.Fatalf("completions: %v", m)
	}
	evs := sseEvents(t, do(t, s, "POST", "/v1/completions", `{"model":"davinci","stream":true}`).body)
	if len(evs) != 3 || !strings.Contains(evs[0], `"object":"text_completion"`) || evs[2] != "[DONE]" {
		t.Fatalf("completions stream: %q", evs)
	}

	m = decode(t, do(t, s, "POST", "/v1/embeddings", `{"model":"emb","input":["x","y","z"]}`).body)
	data := m["data"].([]any)
	if m["object"] != "list" || m["model"] != "emb" || len(data) != 3 {
		t.Fatalf("embeddings: %v", m)
	}
	if vec := data[2].(map[string]any)["embedding"].([]any); len(vec) != 4 {
		t.Fatalf("embedding dimension %d, want 32/8", len(vec))
	}
	// stream is ignored where the surface cannot stream.
	m = decode(t, do(t, s, "POST", "/v1/embeddings", `{"model":"emb","input":"x","stream":true}`).body)
	if len(m["data"].([]any)) != 1 {
		t.Fatalf("embeddings single input: %v", m)
	}

	m = decode(t, do(t, s, "POST", "/v1/images/generations", `{"model":"img","prompt":"p","n":2}`).body)
	if d := m["data"].([]any); len(d) != 2 || !strings.Contains(d[1].(map[string]any)["url"].(string), "gamma") {
		t.Fatalf("images: %v", m)
	}

	r := do(t, s, "GET", "/v1/models", "")
	m = decode(t, r.body)
	d := m["data"].([]any)
	if r.status != 200 || len(d) != 2 || d[1].(map[string]any)["id"] != "b" || d[0].(map[string]any)["owned_by"] != "gamma" {
		t.Fatalf("models: %s", r.body)
	}
}

func TestBadRequests(t *testing.T) {
	s := startMock(t, Options{})
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/nope", `{}`, 404, "not_found"},
		{"GET", "/v1/chat/completions", ``, 405, "method_not_allowed"},
		{"POST", "/v1/models", ``, 405, "method_not_allowed"},
		{"POST", "/v1/chat/completions", `{"model":`, 400, "invalid_request"},
		{"POST", "/v1/chat/completions", `[1]`, 400, "invalid_request"},
		{"POST", "/v1/embeddings", `{"input":"x"}`, 400, "invalid_request"},
		{"POST", "/_mock/fail?status=99", ``, 400, "invalid_request"},
		{"POST", "/_mock/fail?kind=explode", ``, 400, "invalid_request"},
		{"POST", "/_mock/latency?d=soon", ``, 400, "invalid_request"},
		{"GET", "/_mock/fail", ``, 404, "not_found"},
	}
	for _, c := range cases {
		r := do(t, s, c.method, c.path, c.body)
		if r.status != c.status {
			t.Errorf("%s %s %s: status %d, want %d (%s)", c.method, c.path, c.body, r.status, c.status, r.body)
			continue
		}
		e := decode(t, r.body)["error"].(map[string]any)
		if e["code"] != c.code || e["message"] == "" {
			t.Errorf("%s %s: error %v, want code %s", c.method, c.path, e, c.code)
		}
	}
	// Injection was never armed by the refused admin calls.
	if r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m"}`); r.status != 200 {
		t.Fatalf("status %d after refused admin calls", r.status)
	}
	st := s.Stats()
	if st.NotFound != 1 || st.BadRequests != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAPIKeyCheckedNeverEchoed(t *testing.T) {
	const key = "sk-secret-4f1c9d"
	s := startMock(t, Options{APIKey: key})
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + key + "x", key} {
		r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m"}`, "Authorization", auth)
		if r.status != 401 || bytes.Contains(r.body, []byte("secret")) {
			t.Fatalf("auth %q: status %d body %s", auth, r.status, r.body)
		}
	}
	for _, path := range []string{"/v1/chat/completions", "/v1/models", "/_mock/stats"} {
		method := "POST"
		if path != "/v1/chat/completions" {
			method = "GET"
		}
		r := do(t, s, method, path, `{"model":"m","stream":true}`, "Authorization", "Bearer "+key)
		if r.status != 200 || bytes.Contains(r.body, []byte(key)) {
			t.Fatalf("%s: status %d, body %s", path, r.status, r.body)
		}
	}
	if st := s.Stats(); st.Unauthorized != 4 || st.Requests != 6 {
		t.Fatalf("stats %+v", st)
	}
}

func TestInjectCountedFailuresOverHTTP(t *testing.T) {
	s := startMock(t, Options{Name: "p"})
	if r := do(t, s, "POST", "/_mock/fail?status=429&count=2&retry_after=7&code=rate_limit_exceeded", ""); r.status != 200 {
		t.Fatalf("arm: %d %s", r.status, r.body)
	}
	for i := range 2 {
		r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m"}`)
		e := decode(t, r.body)["error"].(map[string]any)
		if r.status != 429 || r.header["Retry-After"] != "7" || e["type"] != "rate_limit_error" || e["code"] != "rate_limit_exceeded" {
			t.Fatalf("failure %d: %d %v %s", i, r.status, r.header, r.body)
		}
	}
	if r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m"}`); r.status != 200 {
		t.Fatalf("third request: %d", r.status)
	}

	// count absent: fail until reset, including streams.
	do(t, s, "POST", "/_mock/fail?status=400&code=context_length_exceeded", "")
	for range 3 {
		r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m","stream":true}`)
		e := decode(t, r.body)["error"].(map[string]any)
		if r.status != 400 || e["code"] != "context_length_exceeded" || e["type"] != "invalid_request_error" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	do(t, s, "POST", "/_mock/reset", "")
	if r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m"}`); r.status != 200 {
		t.Fatalf("after reset: %d", r.status)
	}

	r := do(t, s, "GET", "/_mock/stats", "")
	var st Stats
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Name != "p" || st.Requests != 7 || st.Failed != 5 || st.ByPath["/v1/chat/completions"] != 7 || st.Streams != 0 {
		t.Fatalf("stats %+v", st)
	}
	do(t, s, "POST", "/_mock/reset?stats=1", "")
	if st := s.Stats(); st.Requests != 0 || st.Failed != 0 || st.ByPath["/v1/chat/completions"] != 0 {
		t.Fatalf("stats after reset: %+v", st)
	}
}

func TestFailRate(t *testing.T) {
	s := startMock(t, Options{FailRate: 1, FailStatus: 502})
	for range 5 {
		if r := do(t, s, "POST", "/v1/embeddings", `{"model":"m","input":"x"}`); r.status != 502 {
			t.Fatalf("status %d", r.status)
		}
	}
	ok := startMock(t, Options{FailRate: 0})
	for range 5 {
		if r := do(t, ok, "POST", "/v1/embeddings", `{"model":"m","input":"x"}`); r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
	}
}

// streamRead reads a streaming response event by event as a client would.
func streamRead(t *testing.T, s *Server, body string) (events []string, err error) {
	t.Helper()
	c := &fasthttp.HostClient{Addr: s.Addr(), StreamResponseBody: true}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + s.Addr() + "/v1/chat/completions")
	req.Header.SetMethod("POST")
	req.SetBodyString(body)
	if err := c.Do(req, resp); err != nil {
		return nil, err
	}
	if resp.StatusCode() != 200 {
		t.Fatalf("status %d", resp.StatusCode())
	}
	sc := bufio.NewScanner(resp.BodyStream())
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			events = append(events, line)
		}
	}
	return events, sc.Err()
}

func TestInjectStreamFailures(t *testing.T) {
	s := startMock(t, Options{StreamEvents: 4})

	s.Fail(Failure{Kind: KindCut, After: 2, Count: 1})
	evs, err := streamRead(t, s, `{"model":"m","stream":true}`)
	if err == nil || len(evs) != 2 {
		t.Fatalf("cut stream: events %d, err %v; want 2 events then a read error", len(evs), err)
	}

	s.Fail(Failure{Kind: KindSSEError, After: 0, Status: 500, Count: 1})
	evs, err = streamRead(t, s, `{"model":"m","stream":true}`)
	if err != nil || len(evs) != 1 || !strings.HasPrefix(evs[0], `data: {"error":{`) || !strings.Contains(evs[0], "server_error") {
		t.Fatalf("sse_error: %q %v", evs, err)
	}

	// A cut of a non-streaming request is a transport error before any byte.
	s.Fail(Failure{Kind: KindCut, Count: 1})
	if r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m"}`); r.err == nil {
		t.Fatalf("non-stream cut answered %d %s", r.status, r.body)
	}
	// sse_error on a non-streaming request is a plain status failure.
	s.Fail(Failure{Kind: KindSSEError, Status: 503, Count: 1})
	if r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m"}`); r.status != 503 {
		t.Fatalf("sse_error non-stream: %d", r.status)
	}
	// Counted injections are used up: the next stream is whole.
	evs, err = streamRead(t, s, `{"model":"m","stream":true}`)
	if err != nil || len(evs) != 5 || evs[4] != "data: [DONE]" {
		t.Fatalf("after injections: %q %v", evs, err)
	}
}

func TestLatency(t *testing.T) {
	s := startMock(t, Options{Latency: 30 * time.Millisecond})
	start := time.Now()
	do(t, s, "POST", "/v1/chat/completions", `{"model":"m"}`)
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("latency option ignored: %v", d)
	}
	do(t, s, "POST", "/_mock/latency?d=0s", "")
	start = time.Now()
	do(t, s, "POST", "/_mock/latency?d=60ms", "")
	do(t, s, "POST", "/v1/chat/completions", `{"model":"m"}`)
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Fatalf("admin latency ignored: %v", d)
	}
	s.Reset()
	if got := time.Duration(s.latency.Load()); got != 30*time.Millisecond {
		t.Fatalf("reset restored %v", got)
	}
}

// With stream_options.include_usage a final chunk with no choices carries
// the answer's usage, as OpenAI sends it; without, no chunk has usage.
func TestChatCompletionStreamUsageChunk(t *testing.T) {
	s := startMock(t, Options{Name: "beta", StreamEvents: 3, ResponseBytes: 50})
	r := do(t, s, "POST", "/v1/chat/completions", `{"model":"m1","stream":true,"stream_options":{"include_usage":true}}`)
	evs := sseEvents(t, r.body)
	if len(evs) != 5 || evs[4] != "[DONE]" {
		t.Fatalf("want 3 chunks, the usage chunk and [DONE], got %q", evs)
	}
	m := decode(t, []byte(evs[3]))
	prompt, completion := s.UsageFigures()
	u, _ := m["usage"].(map[string]any)
	if len(m["choices"].([]any)) != 0 || u["prompt_tokens"] != float64(prompt) || u["completion_tokens"] != float64(completion) ||
		u["total_tokens"] != float64(prompt+completion) {
		t.Fatalf("usage chunk %s", evs[3])
	}
	r = do(t, s, "POST", "/v1/chat/completions", `{"model":"m1","stream":true}`)
	for _, e := range sseEvents(t, r.body) {
		if strings.Contains(e, "usage") {
			t.Fatalf("usage without include_usage: %s", e)
		}
	}
}
