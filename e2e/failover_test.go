package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// wantBedrockAnswered checks that bedrock, the second member of the
// claude- chain, answered after anthropic failed: the client got bedrock's
// text with the model it asked for, and bedrock received the mapped model
// id, escaped in the path, on the endpoint for the mode.
func wantBedrockAnswered(t *testing.T, e *env, r result, stream bool, attempts string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("want bedrock's answer, got %v", r.err)
	}
	if r.content != bedrockText() || r.finish != "stop" || r.model != claudeModel {
		t.Errorf("content %q finish %q model %q, want %q stop %q", r.content, r.finish, r.model, bedrockText(), claudeModel)
	}
	wantHeaders(t, r.header, "bedrock", "bedrock", bedrockModelID, attempts, "1")
	op := "converse"
	if stream {
		op = "converse-stream"
	}
	got := e.bed.last(t)
	if want := "/model/" + bedrockEscaped + "/" + op; got.uri != want {
		t.Errorf("bedrock mock got %s, want %s", got.uri, want)
	}
	if strings.Contains(string(got.body), `"model"`) {
		t.Errorf("bedrock body carries a model field (Converse takes it in the path): %s", got.body)
	}
}

// wantFailoverToBedrock sends one claude request to a fresh env whose
// anthropic fails with fail, and checks that bedrock answered it on the
// second attempt, each of the two called once. It returns the env for
// further checks.
func wantFailoverToBedrock(t *testing.T, fail *anthropicFailure, stream bool) *env {
	t.Helper()
	e := newEnv(t)
	e.anth.failWith(fail)
	r := e.chat(t, chatParams(claudeModel), stream)
	wantBedrockAnswered(t, e, r, stream, "2")
	e.wantCalls(t, 0, 1, 1, 0)
	return e
}

// Each failover-safe failure of anthropic moves the walk to bedrock, in
// both modes: 529 overloaded_error (a 5xx), and a 400 whose message says
// the prompt is too long (a context-length overflow).
func TestFailoverAnthropicToBedrock(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail anthropicFailure
	}{
		{"529 overloaded", anthropicFailure{status: 529, typ: "overloaded_error", msg: "Overloaded"}},
		{"500 api_error", anthropicFailure{status: 500, typ: "api_error", msg: "Internal server error"}},
		{"prompt is too long", anthropicFailure{status: 400, typ: "invalid_request_error", msg: "prompt is too long: 215000 tokens > 200000 maximum"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				e := wantFailoverToBedrock(t, &tc.fail, stream)
				// Neither failure parks anthropic, and one 5xx is below the
				// breaker's threshold: once healthy, it answers again.
				e.anth.failWith(nil)
				r := e.chat(t, chatParams(claudeModel), stream)
				if r.err != nil || r.content != anthropicText() {
					t.Fatalf("after recovery: content %q err %v, want anthropic's answer", r.content, r.err)
				}
				wantHeaders(t, r.header, "anthropic", "anthropic", claudeModel, "1", "1")
				e.wantCalls(t, 0, 2, 1, 0)
			})
		})
	}
}

// A 429 with retry-after fails over to bedrock and parks anthropic: the
// next request goes straight to bedrock without calling anthropic.
func TestFailoverOn429ParksAnthropic(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnv(t)
		e.anth.failWith(&anthropicFailure{status: 429, typ: "rate_limit_error",
			msg: "Number of request tokens has exceeded your per-minute rate limit", retryAfter: retryAfterParks})
		r := e.chat(t, chatParams(claudeModel), stream)
		wantBedrockAnswered(t, e, r, stream, "2")
		e.wantCalls(t, 0, 1, 1, 0)

		// Anthropic would answer now, but it is parked for 30 s: skipped.
		e.anth.failWith(nil)
		r = e.chat(t, chatParams(claudeModel), stream)
		wantBedrockAnswered(t, e, r, stream, "1")
		e.wantCalls(t, 0, 1, 2, 0)
	})
}

// A 400 that is not a context-length overflow is the client's fault: it
// goes back to the client with the provider's message in the OpenAI
// envelope, and bedrock is never called.
func TestNoFailoverOnOther400(t *testing.T) {
	const msg = "messages.1.content: Input should be a valid list"
	modes(t, func(t *testing.T, stream bool) {
		e := newEnv(t)
		e.anth.failWith(&anthropicFailure{status: 400, typ: "invalid_request_error", msg: msg})
		r := e.chat(t, chatParams(claudeModel), stream)
		ae := apiError(t, r.err)
		if ae.StatusCode != http.StatusBadRequest || ae.Type != "invalid_request_error" || !strings.Contains(ae.Message, msg) {
			t.Errorf("got %d type %q message %q, want 400 invalid_request_error with %q", ae.StatusCode, ae.Type, ae.Message, msg)
		}
		wantOpenAIEnvelope(t, ae.RawJSON())
		wantHeaders(t, r.header, "anthropic", "anthropic", claudeModel, "1", "1")
		e.wantCalls(t, 0, 1, 0, 0)
	})
}

// A 401 from anthropic means the gateway's credential is wrong, not the
// client's: 502 upstream_auth_error, and bedrock is never called.
func TestNoFailoverOn401(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnv(t)
		e.anth.failWith(&anthropicFailure{status: 401, typ: "authentication_error", msg: "invalid x-api-key"})
		r := e.chat(t, chatParams(claudeModel), stream)
		ae := apiError(t, r.err)
		if ae.StatusCode != http.StatusBadGateway || ae.Type != "upstream_error" || ae.Code != "upstream_auth_error" {
			t.Errorf("got %d type %q code %q, want 502 upstream_error upstream_auth_error", ae.StatusCode, ae.Type, ae.Code)
		}
		wantOpenAIEnvelope(t, ae.RawJSON())
		if strings.Contains(ae.RawJSON(), anthropicKey) || strings.Contains(ae.RawJSON(), clientKey) {
			t.Errorf("error body carries a credential: %s", ae.RawJSON())
		}
		wantHeaders(t, r.header, "anthropic", "anthropic", claudeModel, "1", "1")
		e.wantCalls(t, 0, 1, 0, 0)
	})
}

// wantOpenAIEnvelope checks raw is OpenAI's error object (what openai-go
// exposes as RawJSON: the value of "error"), with param present and null.
func wantOpenAIEnvelope(t *testing.T, raw string) {
	t.Helper()
	var env map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &env); err != nil {
		t.Fatalf("error object %q: %v", raw, err)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := env[k]; !ok {
			t.Errorf("error object %s lacks %q", raw, k)
		}
	}
	if p, ok := env["param"]; ok && string(p) != "null" {
		t.Errorf("error param = %s, want null", p)
	}
}

// retry.attempts re-asks the same member before the walk moves on: a
// single 529 is retried on anthropic, which then answers; bedrock is not
// called. A deterministic 4xx is never retried.
func TestRetrySameMemberFirst(t *testing.T) {
	retry := "    timeout: 5s\n    retry:\n      attempts: 2\n      initial_backoff_ms: 1"
	modes(t, func(t *testing.T, stream bool) {
		e := newEnvWith(t, envOptions{anthropic: retry})
		e.anth.failTimes(&anthropicFailure{status: 529, typ: "overloaded_error", msg: "Overloaded"}, 1)
		r := e.chat(t, chatParams(claudeModel), stream)
		if r.err != nil || r.content != anthropicText() {
			t.Fatalf("content %q err %v, want anthropic's answer on the retry", r.content, r.err)
		}
		wantHeaders(t, r.header, "anthropic", "anthropic", claudeModel, "2", "1")
		e.wantCalls(t, 0, 2, 0, 0)

		e.anth.failWith(&anthropicFailure{status: 400, typ: "invalid_request_error", msg: "messages: Input should be a valid list"})
		r = e.chat(t, chatParams(claudeModel), stream)
		if ae := apiError(t, r.err); ae.StatusCode != http.StatusBadRequest {
			t.Errorf("got %d, want 400", ae.StatusCode)
		}
		wantHeaders(t, r.header, "anthropic", "anthropic", claudeModel, "1", "1")
		e.wantCalls(t, 0, 3, 0, 0)

		// Two 529s use up anthropic's attempts; bedrock answers the third call.
		e.anth.failWith(&anthropicFailure{status: 529, typ: "overloaded_error", msg: "Overloaded"})
		r = e.chat(t, chatParams(claudeModel), stream)
		wantBedrockAnswered(t, e, r, stream, "3")
		e.wantCalls(t, 0, 5, 1, 0)
	})
}

// An error event as the first frame of a stream is judged like the same
// error as a status: a client error goes back to the client as 400 and an
// authentication error as 502, neither failing over.
func TestNoFailoverOnStreamFirstFrameClientErrors(t *testing.T) {
	for _, tc := range []struct {
		typ, msg string
		status   int
		code     string
	}{
		{"invalid_request_error", "messages.1.content: Input should be a valid list", 400, ""},
		{"authentication_error", "invalid x-api-key", 502, "upstream_auth_error"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			e := newEnv(t)
			e.anth.failWith(&anthropicFailure{kind: failSSEFirst, typ: tc.typ, msg: tc.msg})
			r := e.chat(t, chatParams(claudeModel), true)
			ae := apiError(t, r.err)
			if ae.StatusCode != tc.status || (tc.code != "" && ae.Code != tc.code) {
				t.Errorf("got %d code %q, want %d %q", ae.StatusCode, ae.Code, tc.status, tc.code)
			}
			if tc.status == 400 && !strings.Contains(ae.Message, tc.msg) {
				t.Errorf("message %q, want the provider's %q", ae.Message, tc.msg)
			}
			wantOpenAIEnvelope(t, ae.RawJSON())
			e.wantCalls(t, 0, 1, 0, 0)
		})
	}
}
