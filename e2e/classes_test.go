package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// The failover classes of docs/routing.md, 5 beyond the status codes of
// failover_test.go: a transport error, a 408, an attempt timeout, an open
// circuit, a full queue, and an error event as a stream's first frame.
// Also: what the client gets when the whole chain fails, and a stream
// that fails after its first byte (committed: no failover).

// A transport error (connection closed before any byte) and a 408 fail
// over to bedrock.
func TestFailoverOnTransportErrorAnd408(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail anthropicFailure
	}{
		{"connection closed", anthropicFailure{kind: failCut}},
		{"408", anthropicFailure{status: 408, typ: "timeout_error", msg: "Request timed out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				wantFailoverToBedrock(t, &tc.fail, stream)
			})
		})
	}
}

// An error event as the first frame of anthropic's stream is failover-safe:
// nothing reached the client yet.
func TestFailoverOnStreamErrorFirstFrame(t *testing.T) {
	wantFailoverToBedrock(t, &anthropicFailure{kind: failSSEFirst, typ: "overloaded_error", msg: "Overloaded"}, true)
}

// An attempt that outlives the target's timeout is abandoned and the walk
// moves on, well before the request deadline.
func TestFailoverOnAttemptTimeout(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnvWith(t, envOptions{anthropic: "    timeout: 300ms"})
		e.anth.hold()
		start := time.Now()
		r := e.chat(t, chatParams(claudeModel), stream)
		took := time.Since(start)
		wantBedrockAnswered(t, e, r, stream, "2")
		e.wantCalls(t, 0, 1, 1, 0)
		if took < 300*time.Millisecond || took > 5*time.Second {
			t.Errorf("request took %v; the attempt timeout is 300ms", took)
		}
	})
}

// Once anthropic's circuit opens (2 consecutive 5xx here), the walk skips
// it: the next request goes to bedrock without calling anthropic, though
// anthropic would answer.
func TestFailoverSkipsOpenCircuit(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnvWith(t, envOptions{anthropic: "    timeout: 5s\n    circuit_breaker:\n      failure_threshold: 2\n      timeout: 30s"})
		e.anth.failWith(&anthropicFailure{status: 503, typ: "api_error", msg: "Service unavailable"})
		for i := range 2 {
			r := e.chat(t, chatParams(claudeModel), stream)
			wantBedrockAnswered(t, e, r, stream, "2")
			e.wantCalls(t, 0, i+1, i+1, 0)
		}
		e.anth.failWith(nil)
		r := e.chat(t, chatParams(claudeModel), stream)
		wantBedrockAnswered(t, e, r, stream, "1")
		e.wantCalls(t, 0, 2, 3, 0)
	})
}

// With anthropic's only slot taken and no queue, the next request fails
// over to bedrock at once; the one holding the slot is still answered by
// anthropic.
func TestFailoverOnFullQueue(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnvWith(t, envOptions{anthropic: "    timeout: 5s\n    concurrency:\n      max_concurrency: 1\n      queue_size: 0"})
		e.anth.hold()
		var wg sync.WaitGroup
		var first result
		wg.Go(func() { first = e.chat(t, chatParams(claudeModel), false) })
		waitFor(t, 5*time.Second, "the first request to reach anthropic", func() bool { return e.anth.n() == 1 })

		r := e.chat(t, chatParams(claudeModel), stream)
		wantBedrockAnswered(t, e, r, stream, "")
		// The saturated member was not called: one upstream call was made.
		if a := r.header.Get("X-Gateway-Attempts"); a != "1" {
			t.Errorf("X-Gateway-Attempts = %q, want 1 (anthropic was skipped, not called)", a)
		}
		e.anth.release()
		wg.Wait()
		if first.err != nil || first.content != anthropicText() {
			t.Errorf("the request holding the slot: content %q err %v", first.content, first.err)
		}
		e.wantCalls(t, 0, 1, 1, 0)
	})
}

// When every member fails, the client gets the last member's failure in
// OpenAI's shape: a 5xx as 502 upstream_error, a 429 as 429
// rate_limit_exceeded with the upstream's Retry-After.
func TestWholeChainFails(t *testing.T) {
	for _, tc := range []struct {
		name       string
		anth       anthropicFailure
		bed        bedrockFailure
		status     int
		typ, code  string
		retryAfter string
	}{
		{"5xx", anthropicFailure{status: 529, typ: "overloaded_error", msg: "Overloaded"},
			bedrockFailure{status: 503, errType: "ServiceUnavailableException", msg: "Service is unavailable"},
			502, "upstream_error", "upstream_error", ""},
		{"429", anthropicFailure{status: 429, typ: "rate_limit_error", msg: "rate limited", retryAfter: "20"},
			bedrockFailure{status: 429, errType: "ThrottlingException", msg: "Too many requests", retryAfter: "7"},
			429, "rate_limit_error", "rate_limit_exceeded", "7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				e := newEnv(t)
				e.anth.failWith(&tc.anth)
				e.bed.failWith(&tc.bed)
				r := e.chat(t, chatParams(claudeModel), stream)
				ae := apiError(t, r.err)
				if ae.StatusCode != tc.status || ae.Type != tc.typ || ae.Code != tc.code {
					t.Errorf("got %d type %q code %q, want %d %q %q", ae.StatusCode, ae.Type, ae.Code, tc.status, tc.typ, tc.code)
				}
				wantOpenAIEnvelope(t, ae.RawJSON())
				if tc.retryAfter != "" && ae.Response.Header.Get("Retry-After") != tc.retryAfter {
					t.Errorf("Retry-After = %q, want %q", ae.Response.Header.Get("Retry-After"), tc.retryAfter)
				}
				wantHeaders(t, r.header, "bedrock", "bedrock", bedrockModelID, "2", "1")
				e.wantCalls(t, 0, 1, 1, 0)
			})
		})
	}
}

// A stream that fails after its first byte is committed: the client has
// what was sent so far, then an error frame and no [DONE]; bedrock is not
// called. The first byte is the first content: text here.
func TestStreamFailureAfterFirstByte(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind int
		sent string // text the client must have before the error frame
	}{
		{"after a text delta", failSSEAfter, `"content":"Hello"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.anth.failWith(&anthropicFailure{kind: tc.kind, typ: "overloaded_error", msg: "Overloaded"})
			status, h, body := e.rawChat(t, claudeModel, true)
			wantCommittedFailure(t, status, h, body, tc.sent)
			if !strings.Contains(body, `"role":"assistant"`) {
				t.Errorf("the role chunk is missing from a stream that sent text: %q", body)
			}
			wantHeaders(t, h, "anthropic", "anthropic", claudeModel, "1", "1")
			e.wantCalls(t, 0, 1, 0, 0)

			// openai-go reports it as an error.
			if r := e.chat(t, chatParams(claudeModel), true); r.err == nil {
				t.Error("openai-go saw a clean end of a stream that failed")
			}
			e.wantCalls(t, 0, 2, 0, 0)
		})
	}
}

// An error event after message_start but before any content (where real
// Anthropic streams fail with overloaded_error) comes before the first
// byte: the role chunk is held back with it, nothing is committed, and the
// chain fails over to bedrock, whose stream the client gets whole.
func TestStreamFailureBeforeContent(t *testing.T) {
	t.Run("after message_start", func(t *testing.T) {
		e := newEnv(t)
		e.anth.failWith(&anthropicFailure{kind: failSSEAfterStart, typ: "overloaded_error", msg: "Overloaded"})
		status, h, body := e.rawChat(t, claudeModel, true)
		if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("status %d content type %q: %s", status, h.Get("Content-Type"), body)
		}
		wantHeaders(t, h, "bedrock", "bedrock", bedrockModelID, "2", "1")
		e.wantCalls(t, 0, 1, 1, 0)
		data := sseData(body)
		if len(data) < 2 || data[len(data)-1] != "[DONE]" {
			t.Fatalf("stream does not end with data: [DONE]: %q", body)
		}
		if strings.Contains(body, `"error"`) || strings.Contains(body, "Overloaded") {
			t.Errorf("anthropic's failure reached the client: %q", body)
		}
		if n := strings.Count(body, `"role":"assistant"`); n != 1 {
			t.Errorf("%d role chunks, want bedrock's one: %q", n, body)
		}

		// openai-go reads bedrock's answer whole.
		r := e.chat(t, chatParams(claudeModel), true)
		if r.err != nil || r.content != bedrockText() {
			t.Errorf("openai-go: content %q, err %v; want %q", r.content, r.err, bedrockText())
		}
		wantHeaders(t, r.header, "bedrock", "bedrock", bedrockModelID, "2", "1")
		e.wantCalls(t, 0, 2, 2, 0)
	})
}

// wantCommittedFailure checks a stream answered 200 whose data frames
// include sent, then end with an error object and no [DONE].
func wantCommittedFailure(t *testing.T, status int, h http.Header, body, sent string) {
	t.Helper()
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content type %q, want 200 text/event-stream: %s", status, h.Get("Content-Type"), body)
	}
	data := sseData(body)
	if len(data) < 2 {
		t.Fatalf("stream %q", body)
	}
	if !strings.Contains(strings.Join(data[:len(data)-1], "\n"), sent) {
		t.Errorf("what was sent before the failure (%s) is missing: %q", sent, body)
	}
	last := data[len(data)-1]
	if !strings.HasPrefix(last, `{"error":`) || !strings.Contains(last, `"type"`) {
		t.Errorf("last frame %q, want an error object", last)
	}
	if strings.Contains(body, "[DONE]") {
		t.Errorf("a failed stream ends with [DONE]: %q", body)
	}
}

// Bedrock, the chain's last member, reports ConverseStream failures as
// exception frames. As the first frame, nothing was sent yet: the client
// gets a plain error with the exception's status class. After text, the
// stream ends with an error frame and no [DONE].
func TestBedrockStreamExceptions(t *testing.T) {
	overloaded := &anthropicFailure{status: 529, typ: "overloaded_error", msg: "Overloaded"}
	for _, tc := range []struct {
		exception string
		status    int
		code      string
	}{
		{"throttlingException", 429, "rate_limit_exceeded"},
		{"serviceUnavailableException", 502, "upstream_error"},
		{"validationException", 400, "invalid_request"},
	} {
		t.Run(tc.exception+"/first", func(t *testing.T) {
			e := newEnv(t)
			e.anth.failWith(overloaded)
			e.bed.failWith(&bedrockFailure{exception: tc.exception, streamAfter: -1, msg: "bedrock says " + tc.exception})
			r := e.chat(t, chatParams(claudeModel), true)
			ae := apiError(t, r.err)
			if ae.StatusCode != tc.status || ae.Code != tc.code {
				t.Errorf("got %d %q, want %d %q", ae.StatusCode, ae.Code, tc.status, tc.code)
			}
			wantOpenAIEnvelope(t, ae.RawJSON())
			wantHeaders(t, r.header, "bedrock", "bedrock", bedrockModelID, "2", "1")
			e.wantCalls(t, 0, 1, 1, 0)
		})
	}
	// messageStart alone is not a first byte: an exception right after it
	// is answered as a plain error too.
	t.Run("after messageStart", func(t *testing.T) {
		e := newEnv(t)
		e.anth.failWith(overloaded)
		e.bed.failWith(&bedrockFailure{exception: "throttlingException", streamAfter: 0, msg: "bedrock is busy"})
		r := e.chat(t, chatParams(claudeModel), true)
		ae := apiError(t, r.err)
		if ae.StatusCode != 429 || ae.Code != "rate_limit_exceeded" {
			t.Errorf("got %d %q, want 429 rate_limit_exceeded", ae.StatusCode, ae.Code)
		}
		wantOpenAIEnvelope(t, ae.RawJSON())
		wantHeaders(t, r.header, "bedrock", "bedrock", bedrockModelID, "2", "1")
		e.wantCalls(t, 0, 1, 1, 0)
	})
	t.Run("after text", func(t *testing.T) {
		e := newEnv(t)
		e.anth.failWith(overloaded)
		e.bed.failWith(&bedrockFailure{exception: "modelStreamErrorException", streamAfter: 1, msg: "model stream failed"})
		status, h, body := e.rawChat(t, claudeModel, true)
		wantCommittedFailure(t, status, h, body, `"content":"`+bedrockPieces[0]+`"`)
		wantHeaders(t, h, "bedrock", "bedrock", bedrockModelID, "2", "1")
		e.wantCalls(t, 0, 1, 1, 0)
	})
}

// Every successful stream, whatever the provider behind it, is a
// well-formed OpenAI SSE stream that ends with data: [DONE].
func TestStreamsEndWithDone(t *testing.T) {
	for _, tc := range []struct {
		name, model, target string
		anthFail            *anthropicFailure
		text                string
	}{
		{"openai", "gpt-4o", "openai", nil, mockContent},
		{"anthropic", claudeModel, "anthropic", nil, anthropicText()},
		{"bedrock", claudeModel, "bedrock", &anthropicFailure{status: 529, typ: "overloaded_error", msg: "Overloaded"}, bedrockText()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.anth.failWith(tc.anthFail)
			status, h, body := e.rawChat(t, tc.model, true)
			if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d content type %q: %s", status, h.Get("Content-Type"), body)
			}
			if h.Get("X-Gateway-Target") != tc.target {
				t.Errorf("X-Gateway-Target = %q, want %q", h.Get("X-Gateway-Target"), tc.target)
			}
			data := sseData(body)
			if len(data) < 2 || data[len(data)-1] != "[DONE]" {
				t.Fatalf("stream does not end with data: [DONE]: %q", body)
			}
			for _, d := range data[:len(data)-1] {
				if !strings.HasPrefix(d, "{") || strings.Contains(d, `"error"`) {
					t.Errorf("frame %q is not a chunk", d)
				}
			}
		})
	}
}

// rawChat posts a chat request for model with net/http (the client's key
// as bearer) and returns the status, headers and whole body.
func (e *env) rawChat(t *testing.T, model string, stream bool) (int, http.Header, string) {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, e.base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v (so far %q)", err, b)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// sseData returns the data: payloads of an SSE body, in order.
func sseData(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// waitFor polls cond every 5 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// When every member of the chain is parked after a 429, the gateway
// answers 429 rate_limit_exceeded itself, with a Retry-After, and calls
// no upstream.
func TestAllParked(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnv(t)
		e.anth.failWith(&anthropicFailure{status: 429, typ: "rate_limit_error", msg: "rate limited", retryAfter: "30"})
		e.bed.failWith(&bedrockFailure{status: 429, errType: "ThrottlingException", msg: "Too many requests", retryAfter: "20"})
		r := e.chat(t, chatParams(claudeModel), stream)
		if ae := apiError(t, r.err); ae.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("first request: %d, want 429", ae.StatusCode)
		}
		e.wantCalls(t, 0, 1, 1, 0)

		e.anth.failWith(nil)
		e.bed.failWith(nil)
		r = e.chat(t, chatParams(claudeModel), stream)
		ae := apiError(t, r.err)
		if ae.StatusCode != http.StatusTooManyRequests || ae.Type != "rate_limit_error" || ae.Code != "rate_limit_exceeded" {
			t.Errorf("got %d type %q code %q, want 429 rate_limit_error rate_limit_exceeded", ae.StatusCode, ae.Type, ae.Code)
		}
		ra := ae.Response.Header.Get("Retry-After")
		if n, err := strconv.Atoi(ra); err != nil || n < 1 || n > 30 {
			t.Errorf("Retry-After = %q, want the seconds left of a park (1..30)", ra)
		}
		wantOpenAIEnvelope(t, ae.RawJSON())
		e.wantCalls(t, 0, 1, 1, 0)
	})
}

// Usage reported by the translated providers reaches the client: in the
// completion, and in the last chunk of a stream that asked for it.
func TestTranslatedUsage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		anthFail *anthropicFailure
		total    int64
	}{
		{"anthropic", nil, 9}, // 5 in + 4 out
		{"bedrock", &anthropicFailure{status: 529, typ: "overloaded_error", msg: "Overloaded"}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.anth.failWith(tc.anthFail)
			comp, err := e.client.Chat.Completions.New(testCtx(t), chatParams(claudeModel))
			if err != nil {
				t.Fatal(err)
			}
			if comp.Usage.TotalTokens != tc.total {
				t.Errorf("completion usage %+v, want total %d", comp.Usage, tc.total)
			}
			p := chatParams(claudeModel)
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			s := e.client.Chat.Completions.NewStreaming(testCtx(t), p)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if acc.Usage.TotalTokens != tc.total {
				t.Errorf("stream usage %+v, want total %d", acc.Usage, tc.total)
			}
		})
	}
}

// A target's timeout bounds a stream only until its first byte: a stream
// whose deltas take longer in all than the timeout completes.
func TestStreamTimeoutIsUntilFirstByte(t *testing.T) {
	e := newEnvWith(t, envOptions{anthropic: "    timeout: 500ms"})
	e.anth.gap.Store(int64(250 * time.Millisecond)) // 4 deltas: 1 s
	r := e.chat(t, chatParams(claudeModel), true)
	if r.err != nil || r.content != anthropicText() || r.finish != "stop" {
		t.Fatalf("content %q finish %q err %v, want anthropic's whole answer", r.content, r.finish, r.err)
	}
	wantHeaders(t, r.header, "anthropic", "anthropic", claudeModel, "1", "1")
	e.wantCalls(t, 0, 1, 0, 0)
}

// A context-length overflow reported as the first event of anthropic's
// stream fails over like the same error as a 400.
func TestFailoverOnStreamPromptTooLongFirstFrame(t *testing.T) {
	wantFailoverToBedrock(t, &anthropicFailure{kind: failSSEFirst, typ: "invalid_request_error", msg: "prompt is too long: 215000 tokens > 200000 maximum"}, true)
}
