package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Recording mocks of the Responses API (an openai target's /v1/responses)
// and of the Messages API (an anthropic target's /v1/messages and
// /v1/messages/count_tokens). Each answers from a script, one step per
// request, then with its default: a well-formed answer, streamed when the
// body asks for it.

// step answers one request; it returns after writing the answer.
type step func(w http.ResponseWriter, r *http.Request, body []byte)

// apiMock is one scripted, recording mock.
type apiMock struct {
	recorder
	srv    *httptest.Server
	name   string
	mu     sync.Mutex
	script []step
	def    step
}

func (m *apiMock) then(steps ...step) {
	m.mu.Lock()
	m.script = append(m.script, steps...)
	m.mu.Unlock()
}

func (m *apiMock) next() step {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.script) == 0 {
		return m.def
	}
	s := m.script[0]
	m.script = m.script[1:]
	return s
}

// startAPIMock serves name on 127.0.0.1; auth(r) refuses a request with
// 401 when it returns false.
func startAPIMock(t *testing.T, name string, auth func(*http.Request) bool, def step) *apiMock {
	t.Helper()
	m := &apiMock{name: name, def: def}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := recordHTTP(&m.recorder, r)
		if !auth(r) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"mock: wrong credential"}`)
			return
		}
		m.next()(w, r, body)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// sseEvents writes named events, flushing each.
func sseEvents(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	f, _ := w.(http.Flusher)
	for _, e := range events {
		fmt.Fprint(w, e)
		if f != nil {
			f.Flush()
		}
	}
}

func namedEvent(name string, data any) string {
	b, _ := json.Marshal(data)
	return "event: " + name + "\ndata: " + string(b) + "\n\n"
}

func jsonAnswer(status int, body string) step {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func wantsStream(body []byte) bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Stream
}

func modelOf(body []byte) string {
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Model
}

// --- Messages API ---

// messagesText is the answer of the Messages mock, in its stream's pieces.
var messagesPieces = []string{"Bonjour", " from ", "Claude"}

func startMessagesMock(t *testing.T, name, key string) *apiMock {
	auth := func(r *http.Request) bool { return r.Header.Get("x-api-key") == key }
	return startAPIMock(t, name, auth, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			jsonAnswer(200, `{"input_tokens":42}`)(w, r, body)
			return
		}
		if wantsStream(body) {
			sseEvents(w, messagesStream(name, modelOf(body), true)...)
			return
		}
		jsonAnswer(200, messagesAnswer(name, modelOf(body)))(w, r, body)
	})
}

func messagesAnswer(id, model string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "msg_" + id, "type": "message", "role": "assistant", "model": model,
		"content":     []any{map[string]any{"type": "text", "text": strings.Join(messagesPieces, "")}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 5, "output_tokens": 3},
	})
	return string(b)
}

// messagesStream is a Messages stream; complete=false stops it after the
// first text delta, without message_stop (a cut).
func messagesStream(id, model string, complete bool) []string {
	ev := []string{
		namedEvent("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_" + id, "type": "message", "role": "assistant", "model": model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 5, "output_tokens": 1}}}),
		namedEvent("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}),
		namedEvent("ping", map[string]any{"type": "ping"}),
	}
	for i, p := range messagesPieces {
		ev = append(ev, namedEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": p}}))
		if !complete && i == 0 {
			return ev
		}
	}
	return append(ev,
		namedEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
		namedEvent("message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 3}}),
		namedEvent("message_stop", map[string]any{"type": "message_stop"}))
}

func anthropicErr(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	return string(b)
}

// messagesErrorEvent answers a stream whose first event is an error.
func messagesErrorEvent(typ, msg string) step {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		sseEvents(w, "event: error\ndata: "+anthropicErr(typ, msg)+"\n\n")
	}
}

// messagesCut answers a stream that stops after its first text delta.
func messagesCut(w http.ResponseWriter, _ *http.Request, body []byte) {
	sseEvents(w, messagesStream("cut", modelOf(body), false)...)
}

// --- Responses API ---

var responsesPieces = []string{"Hello", " from ", "GPT"}

func startResponsesMock(t *testing.T, name, key string) *apiMock {
	auth := func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+key }
	return startAPIMock(t, name, auth, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if wantsStream(body) {
			sseEvents(w, responsesStream(name, modelOf(body), true)...)
			return
		}
		jsonAnswer(200, responsesAnswer(name, modelOf(body), "completed"))(w, r, body)
	})
}

func responseObject(id, model, status string) map[string]any {
	output := []any{}
	if status == "completed" {
		output = []any{map[string]any{"type": "message", "id": "msg_" + id, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": strings.Join(responsesPieces, ""), "annotations": []any{}}}}}
	}
	return map[string]any{"id": "resp_" + id, "object": "response", "created_at": 1700000000, "status": status,
		"model": model, "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": 5, "output_tokens": 3, "total_tokens": 8,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}
}

func responsesAnswer(id, model, status string) string {
	b, _ := json.Marshal(responseObject(id, model, status))
	return string(b)
}

// responsesStream is a Responses stream; complete=false stops it after the
// first text delta, without response.completed (a cut).
func responsesStream(id, model string, complete bool) []string {
	seq := 0
	ev := func(typ string, fields map[string]any) string {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return namedEvent(typ, fields)
	}
	out := []string{
		ev("response.created", map[string]any{"response": responseObject(id, model, "in_progress")}),
		ev("response.in_progress", map[string]any{"response": responseObject(id, model, "in_progress")}),
	}
	for i, p := range responsesPieces {
		out = append(out, ev("response.output_text.delta", map[string]any{"item_id": "msg_" + id, "output_index": 0,
			"content_index": 0, "delta": p, "logprobs": []any{}}))
		if !complete && i == 0 {
			return out
		}
	}
	return append(out, ev("response.completed", map[string]any{"response": responseObject(id, model, "completed")}))
}

// responsesFirstEvent answers a stream whose first event is name with data.
func responsesFirstEvent(name string, data map[string]any) step {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		data["type"] = name
		data["sequence_number"] = 0
		sseEvents(w, namedEvent(name, data))
	}
}

func responsesCut(w http.ResponseWriter, _ *http.Request, body []byte) {
	sseEvents(w, responsesStream("cut", modelOf(body), false)...)
}
