package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// respChunk builds a chat.completion.chunk with delta (JSON) and an optional
// finish_reason, as the chat adapters send them.
func respChunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000001,"model":"claude-x","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`
}

const respUsageChunk = `{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000001,"model":"claude-x","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"total_tokens":59,"prompt_tokens_details":{"cached_tokens":40}}}`

// runRespStream feeds chunks to a new stream, then its end, and returns the
// client's bytes.
func runRespStream(t *testing.T, chunks ...string) []byte {
	t.Helper()
	s := NewResponsesStream([]byte("gpt-5.1-codex"))
	var out []byte
	for _, c := range chunks {
		var err error
		if out, err = s.Chunk(out, []byte(c)); err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
	}
	out, err := s.Done(out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// respSDKEvents reads the SSE bytes with openai-go's own SSE decoder and event
// union, the way client.Responses.NewStreaming does, and checks what every
// event must have: the event name equal to the data's type, and
// sequence_number counting from 0.
func respSDKEvents(t *testing.T, sse []byte) ([]responses.ResponseStreamEventUnion, error) {
	t.Helper()
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(sse))}
	dec := ssestream.NewDecoder(res)
	stream := ssestream.NewStream[responses.ResponseStreamEventUnion](dec, nil)
	var events []responses.ResponseStreamEventUnion
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != int64(len(events)) {
			t.Fatalf("event %d (%s) has sequence_number %d", len(events), ev.Type, ev.SequenceNumber)
		}
		events = append(events, ev)
	}
	// The event names, read apart from the SDK (it does not check them).
	for i, block := range strings.Split(strings.TrimSuffix(string(sse), "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(block, "\ndata: ")
		var typ struct{ Type string }
		if !ok || json.Unmarshal([]byte(data), &typ) != nil || name != "event: "+typ.Type {
			t.Fatalf("frame %d is not event: <type> + data: {type:<type>}: %q", i, block)
		}
	}
	return events, stream.Err()
}

func respEventTypes(events []responses.ResponseStreamEventUnion) []string {
	var ts []string
	for _, e := range events {
		ts = append(ts, e.Type)
	}
	return ts
}

// The whole event sequence of an answer with text, a function call, a
// namespaced function call and a custom tool call, as OpenAI orders it.
func TestResponsesStreamSequence(t *testing.T) {
	out := runRespStream(t,
		respChunk(`{"role":"assistant","content":""}`, ""),
		respChunk(`{"content":"Let me "}`, ""),
		respChunk(`{"content":"look."}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"id":"toolu_1","type":"function","function":{"name":"shell_command","arguments":""}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":1,"id":"toolu_2","type":"function","function":{"name":"mcp__github--create_issue","arguments":"{}"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":2,"id":"toolu_3","type":"function","function":{"name":"apply_patch--freeform","arguments":"{\"input\":\"*** Begin"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":2,"function":{"arguments":" Patch\\n\"}"}}]}`, ""),
		respChunk(`{}`, "tool_calls"),
		respUsageChunk,
	)
	events, err := respSDKEvents(t, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "response.output_item.done",
		"response.completed",
	}
	if got := respEventTypes(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	created := events[0].AsResponseCreated().Response
	if created.ID != "resp_chatcmpl-7" || created.Status != "in_progress" || created.Model != "gpt-5.1-codex" {
		t.Fatalf("created %+v", created)
	}
	added := events[2].AsResponseOutputItemAdded()
	if added.OutputIndex != 0 || added.Item.ID != "msg_chatcmpl-7" || added.Item.Type != "message" || added.Item.Status != "in_progress" {
		t.Fatalf("message added %+v", added)
	}
	d := events[4].AsResponseOutputTextDelta()
	if d.ItemID != "msg_chatcmpl-7" || d.OutputIndex != 0 || d.ContentIndex != 0 || d.Delta != "Let me " {
		t.Fatalf("delta %+v", d)
	}
	if done := events[6].AsResponseOutputTextDone(); done.Text != "Let me look." {
		t.Fatalf("text done %q", done.Text)
	}
	if it := events[8].AsResponseOutputItemDone().Item; it.Content[0].Text != "Let me look." || it.Status != "completed" {
		t.Fatalf("message done %+v", it)
	}
	fcAdded := events[9].AsResponseOutputItemAdded()
	if fcAdded.OutputIndex != 1 || fcAdded.Item.ID != "fc_toolu_1" || fcAdded.Item.CallID != "toolu_1" || fcAdded.Item.Name != "shell_command" {
		t.Fatalf("call added %+v", fcAdded)
	}
	if a := events[12].AsResponseFunctionCallArgumentsDone(); a.Arguments != `{"command":"ls"}` || a.ItemID != "fc_toolu_1" || a.OutputIndex != 1 {
		t.Fatalf("arguments done %+v", a)
	}
	ns := events[17].AsResponseOutputItemDone().Item.AsFunctionCall()
	if ns.Name != "create_issue" || ns.Namespace != "mcp__github" || ns.CallID != "toolu_2" {
		t.Fatalf("namespaced call done %+v", ns)
	}
	if in := events[20].AsResponseCustomToolCallInputDone(); in.Input != "*** Begin Patch\n" || in.ItemID != "ctc_toolu_3" || in.OutputIndex != 3 {
		t.Fatalf("custom input done %+v", in)
	}
	ct := events[21].AsResponseOutputItemDone().Item.AsCustomToolCall()
	if ct.Name != "apply_patch" || ct.Input != "*** Begin Patch\n" || ct.CallID != "toolu_3" {
		t.Fatalf("custom call done %+v", ct)
	}
	final := events[22].AsResponseCompleted().Response
	checkRespSDKResponse(t, &final)
	if final.Status != "completed" || len(final.Output) != 4 || final.OutputText() != "Let me look." ||
		final.Usage.InputTokens != 50 || final.Usage.InputTokensDetails.CachedTokens != 40 || final.Usage.OutputTokens != 9 {
		t.Fatalf("completed %+v", final)
	}
}

// The stream's final response is the non-stream translation of the same
// answer: a client gets one result whichever way it asked.
func TestResponsesStreamMatchesAnswer(t *testing.T) {
	out := runRespStream(t,
		respChunk(`{"role":"assistant","content":"On it."}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"id":"toolu_1","type":"function","function":{"name":"shell_command","arguments":"{\"command\":\"ls\"}"}},{"index":1,"id":"toolu_2","type":"function","function":{"name":"mcp__github--create_issue","arguments":"{\"title\":\"t\"}"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":2,"id":"toolu_3","type":"function","function":{"name":"apply_patch--freeform","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\\n\"}"}}]}`, ""),
		respChunk(`{}`, "tool_calls"),
		`{"id":"chatcmpl-7","created":1700000001,"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
	)
	events, err := respSDKEvents(t, out)
	if err != nil {
		t.Fatal(err)
	}
	streamed := events[len(events)-1].AsResponseCompleted().JSON.Response.Raw()
	answer, err := ChatToResponses(nil, []byte(`{"id":"chatcmpl-7","created":1700000001,"choices":[{"index":0,"message":{"role":"assistant","content":"On it.","tool_calls":[
		{"id":"toolu_1","type":"function","function":{"name":"shell_command","arguments":"{\"command\":\"ls\"}"}},
		{"id":"toolu_2","type":"function","function":{"name":"mcp__github--create_issue","arguments":"{\"title\":\"t\"}"}},
		{"id":"toolu_3","type":"function","function":{"name":"apply_patch--freeform","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\\n\"}"}}]},"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`), []byte("gpt-5.1-codex"))
	if err != nil {
		t.Fatal(err)
	}
	respJSONEqual(t, []byte(streamed), string(answer))
}

// openai-go's ResponseAccumulator rebuilds, from the deltas and done
// events alone, the same text, arguments and input the terminal event
// carries.
func TestResponsesStreamAccumulator(t *testing.T) {
	out := runRespStream(t,
		respChunk(`{"role":"assistant","content":"Hel"}`, ""),
		respChunk(`{"content":"lo"}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"get","arguments":"{\"a\""}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":1,"id":"call_10","function":{"name":"apply_patch--freeform","arguments":"{\"input\":\"p\"}"}}]}`, ""),
		respChunk(`{}`, "stop"),
	)
	var acc responses.ResponseAccumulator
	for _, block := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
		_, data, _ := strings.Cut(block, "\ndata: ")
		var ev responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if err := acc.AddEvent(ev); err != nil {
			t.Fatalf("accumulator refused %s: %v", ev.Type, err)
		}
	}
	snap := acc.Snapshot()
	if snap.TerminalEvent != "response.completed" || snap.ResponseID != "resp_chatcmpl-7" || snap.OutputText() != "Hello" || len(snap.Output) != 3 {
		t.Fatalf("snapshot %+v", snap)
	}
	if o := snap.Output[1]; o.Type != "function_call" || o.Arguments != `{"a":1}` || o.CallID != "call_9" || o.Name != "get" {
		t.Fatalf("call %+v", o)
	}
	if o := snap.Output[2]; o.Type != "custom_tool_call" || o.Input != "p" || o.Name != "apply_patch" {
		t.Fatalf("custom call %+v", o)
	}
	r, err := acc.ReconstructedResponse()
	if err != nil || r.OutputText() != "Hello" || r.Status != "completed" {
		t.Fatalf("reconstructed %+v, %v", r, err)
	}
}

// A streamed call of the client's tool search is one tool_search_call
// item, added and done, its arguments whole and on one line in the done
// event; openai-go reads it as such, and it is the non-stream answer's.
func TestResponsesStreamToolSearch(t *testing.T) {
	out := runRespStream(t,
		respChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"toolu_4","type":"function","function":{"name":"tool_search--client","arguments":"{\"query\":"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\n \"echo say\"}"}}]}`, ""),
		respChunk(`{}`, "tool_calls"),
	)
	events, err := respSDKEvents(t, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.output_item.done", "response.completed"}
	if got := respEventTypes(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	done := events[3].AsResponseOutputItemDone().Item
	if done.Type != "tool_search_call" || done.CallID != "toolu_4" || done.Execution != "client" || done.JSON.Arguments.Raw() != `{"query":"echo say"}` {
		t.Fatalf("item %s", done.RawJSON())
	}
	answer, err := ChatToResponses(nil, []byte(`{"id":"chatcmpl-7","created":1700000001,"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"toolu_4","type":"function","function":{"name":"tool_search--client","arguments":"{\"query\":\n \"echo say\"}"}}]},"finish_reason":"tool_calls"}]}`), []byte("gpt-5.1-codex"))
	if err != nil {
		t.Fatal(err)
	}
	respJSONEqual(t, []byte(events[4].AsResponseCompleted().JSON.Response.Raw()), string(answer))
}

// The length running out ends in response.incomplete with
// max_output_tokens, the items marked incomplete.
func TestResponsesStreamIncomplete(t *testing.T) {
	events, err := respSDKEvents(t, runRespStream(t, respChunk(`{"content":"Once upon"}`, ""), respChunk(`{}`, "length"), respUsageChunk))
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Type != "response.incomplete" {
		t.Fatalf("last event %s", last.Type)
	}
	r := last.AsResponseIncomplete().Response
	if r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.Output[0].Status != "incomplete" || r.Usage.OutputTokens != 9 {
		t.Fatalf("incomplete %+v", r)
	}
}

// A refusal streams as a refusal part with refusal.delta and .done.
func TestResponsesStreamRefusal(t *testing.T) {
	events, err := respSDKEvents(t, runRespStream(t, respChunk(`{"refusal":"I can't"}`, ""), respChunk(`{"refusal":" help."}`, ""), respChunk(`{}`, "stop")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.refusal.delta", "response.refusal.delta", "response.refusal.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}
	if got := respEventTypes(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q", got)
	}
	if r := events[6].AsResponseRefusalDone(); r.Refusal != "I can't help." || r.ContentIndex != 0 {
		t.Fatalf("refusal done %+v", r)
	}
	if p := events[8].AsResponseOutputItemDone().Item.Content[0]; p.Type != "refusal" || p.Refusal != "I can't help." {
		t.Fatalf("item %+v", p)
	}
}

// A stream with nothing in it still opens and completes a response.
func TestResponsesStreamEmpty(t *testing.T) {
	events, err := respSDKEvents(t, runRespStream(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := respEventTypes(events); !reflect.DeepEqual(got, []string{"response.created", "response.in_progress", "response.completed"}) {
		t.Fatalf("events %q", got)
	}
	if r := events[2].AsResponseCompleted().Response; len(r.Output) != 0 || r.Usage.JSON.InputTokens.Valid() {
		t.Fatalf("empty response %+v", r)
	}
}

// A failure after the stream began: response.failed carrying the error and
// the items already done, then the error event on which the SDKs raise.
func TestResponsesStreamFail(t *testing.T) {
	s := NewResponsesStream([]byte("m"))
	out, err := s.Chunk(nil, []byte(respChunk(`{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]}`, "")))
	if err != nil {
		t.Fatal(err)
	}
	out, err = s.Chunk(out, []byte(respChunk(`{"content":"half"}`, "")))
	if err != nil {
		t.Fatal(err)
	}
	out = s.Fail(out, 502, "upstream_error", "upstream_error", "upstream stream ended before its final event")
	events, err := respSDKEvents(t, out)
	var se *ssestream.StreamError
	if !errors.As(err, &se) || !strings.Contains(se.Message, "upstream stream ended") {
		t.Fatalf("the SDK did not raise on the error event: %v", err)
	}
	last := events[len(events)-1]
	if last.Type != "response.failed" {
		t.Fatalf("events %q", respEventTypes(events))
	}
	r := last.AsResponseFailed().Response
	if r.Status != "failed" || r.Error.Code != "upstream_error" || r.Error.Message != "upstream stream ended before its final event" ||
		r.Error.Type != "upstream_error" || len(r.Output) != 1 || r.Output[0].CallID != "c1" {
		t.Fatalf("failed response %+v", r)
	}
	var ev struct {
		Type, Code, Message string
		SequenceNumber      int64 `json:"sequence_number"`
		Error               struct{ Message, Type, Code string }
	}
	blocks := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
	_, data, _ := strings.Cut(blocks[len(blocks)-1], "\ndata: ")
	if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Type != "error" || ev.Code != "upstream_error" ||
		ev.Error.Code != "upstream_error" || ev.Error.Type != "upstream_error" || ev.SequenceNumber != last.SequenceNumber+1 {
		t.Fatalf("error event %s", data)
	}
	// The stream is over: nothing more is written.
	if more, err := s.Done(nil); err != nil || len(more) != 0 || len(s.Fail(nil, 500, "t", "c", "m")) != 0 {
		t.Fatalf("a failed stream went on: %q %v", more, err)
	}
	if _, err := s.Chunk(nil, []byte(respChunk(`{"content":"x"}`, ""))); !errors.Is(err, errRespStreamEnded) {
		t.Fatalf("chunk after the end: %v", err)
	}
}

// A failure before any chunk is response.failed first of all (the walk
// has not committed; the integrator may still fail over instead).
func TestResponsesStreamFailFirst(t *testing.T) {
	out := NewResponsesStream([]byte("m")).Fail(nil, 429, "rate_limit_error", "", "slow down")
	events, _ := respSDKEvents(t, out)
	if len(events) != 1 || events[0].Type != "response.failed" {
		t.Fatalf("events %q", respEventTypes(events))
	}
	if e := events[0].AsResponseFailed().Response.Error; e.Code != "rate_limit_exceeded" || e.Message != "slow down" {
		t.Fatalf("error %+v", e)
	}
}

// Hostile or broken upstream streams end in an error, never a panic, and
// append nothing for the chunk that failed.
func TestResponsesStreamHostile(t *testing.T) {
	open := respChunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}`, "")
	for _, tc := range []struct {
		name   string
		chunks []string
		want   error
	}{
		{"not JSON", []string{`{"choices":`}, errRespChunk},
		{"not an object", []string{`[1,2]`}, errRespChunk},
		{"choices an object", []string{`{"choices":{}}`}, errRespChunk},
		{"a choice a string", []string{`{"choices":["x"]}`}, errRespChunk},
		{"a tool call delta a number", []string{respChunk(`{"tool_calls":[1]}`, "")}, errRespChunk},
		{"a negative index", []string{respChunk(`{"tool_calls":[{"index":-1,"id":"x"}]}`, "")}, errRespChunk},
		{"an index that is a string", []string{respChunk(`{"tool_calls":[{"index":"0","id":"x"}]}`, "")}, errRespChunk},
		{"a call continued after the next began", []string{open, respChunk(`{"tool_calls":[{"index":1,"id":"b","function":{"name":"g"}}]}`, ""), respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}`, "")}, errRespToolCallOrder},
		{"a call index going back", []string{respChunk(`{"tool_calls":[{"index":3,"id":"a","function":{"name":"f"}}]}`, ""), respChunk(`{"tool_calls":[{"index":1,"id":"b","function":{"name":"g"}}]}`, "")}, errRespToolCallOrder},
		{"arguments past the bound", []string{open, respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"`+strings.Repeat("a", maxRespHeld)+`"}}]}`, "")}, errRespTooLong},
		{"text past the bound", []string{respChunk(`{"content":"`+strings.Repeat("a", maxRespHeld+1)+`"}`, "")}, errRespTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewResponsesStream([]byte("m"))
			var err error
			for _, c := range tc.chunks {
				if _, err = s.Chunk(nil, []byte(c)); err != nil {
					break
				}
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
	s := NewResponsesStream([]byte("m"))
	if _, err := s.Chunk(nil, []byte(`{"error":{"message":"overloaded","type":"server_error"}}`)); err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("an error object in the stream: %v", err)
	}
}

// Tool call deltas without ids or indexes still make well-formed items:
// the id is derived, a delta without index continues the open call.
func TestResponsesStreamMissingIDs(t *testing.T) {
	events, err := respSDKEvents(t, runRespStream(t,
		respChunk(`{"tool_calls":[{"function":{"name":"f","arguments":"{\"x\""}}]}`, ""),
		respChunk(`{"tool_calls":[{"function":{"arguments":":2}"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":1,"function":{"name":"g","arguments":"{}"}}]}`, ""),
		respChunk(`{}`, "tool_calls"),
	))
	if err != nil {
		t.Fatal(err)
	}
	r := events[len(events)-1].AsResponseCompleted().Response
	if len(r.Output) != 2 || r.Output[0].CallID != "call_chatcmpl-7_0" || r.Output[0].Arguments.OfString != `{"x":2}` ||
		r.Output[1].CallID != "call_chatcmpl-7_1" || r.Output[0].ID == r.Output[1].ID {
		t.Fatalf("output %+v", r.Output)
	}
}

// Text after a tool call opens a second message item, with an id of its own.
func TestResponsesStreamTextAfterCall(t *testing.T) {
	events, err := respSDKEvents(t, runRespStream(t,
		respChunk(`{"content":"a"}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}`, ""),
		respChunk(`{"content":"b"}`, ""),
		respChunk(`{}`, "stop"),
	))
	if err != nil {
		t.Fatal(err)
	}
	r := events[len(events)-1].AsResponseCompleted().Response
	if len(r.Output) != 3 || r.Output[0].ID == r.Output[2].ID || r.Output[2].Content[0].Text != "b" || r.OutputText() != "ab" {
		t.Fatalf("output %+v", r.Output)
	}
}
