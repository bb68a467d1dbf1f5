package translate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Translation cost of the Responses translator: a Codex request of 10 KB
// and of 100 KB (its tool history repeated), a chat answer, and one stream
// event. The baseline is an encoding/json round trip of the same request,
// the naive way to rewrite it.
//
//	go test ./provider/translate -run '^$' -bench 'Responses|ChatToResponses' -benchtime=200ms

// codexBody returns the Codex tool turn with its history repeated (fresh
// call ids each time) until it is at least size bytes.
func codexBody(tb testing.TB, size int) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "responses", "codex_tool_turn.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(b, &req); err != nil {
		tb.Fatal(err)
	}
	input := req["input"].([]any)
	history := input[3:]
	base, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	one, err := json.Marshal(history)
	if err != nil {
		tb.Fatal(err)
	}
	for n := 0; len(base)+n*len(one) < size; n++ {
		for _, it := range history {
			item := map[string]any{}
			for k, v := range it.(map[string]any) {
				item[k] = v
			}
			if id, ok := item["call_id"].(string); ok {
				item["call_id"] = fmt.Sprintf("%s_%d", id, n)
			}
			input = append(input, item)
		}
	}
	req["input"] = input
	out, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func benchRespRequest(b *testing.B, size int) {
	body := codexBody(b, size)
	opt := Options{Model: []byte("claude-sonnet-4-5"), Stream: true}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.RunParallel(func(pb *testing.PB) {
		var dst []byte
		for pb.Next() {
			var err error
			if dst, _, err = ResponsesToChat(dst[:0], body, opt); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkResponsesToChat10KB(b *testing.B)  { benchRespRequest(b, 10<<10) }
func BenchmarkResponsesToChat100KB(b *testing.B) { benchRespRequest(b, 100<<10) }

// benchRespBaseline is the naive twin: decode into maps, encode again.
func benchRespBaseline(b *testing.B, size int) {
	body := codexBody(b, size)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				b.Fatal(err)
			}
			m["model"] = "x"
			if _, err := json.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkBaselineResponsesJSONRoundTrip10KB(b *testing.B)  { benchRespBaseline(b, 10<<10) }
func BenchmarkBaselineResponsesJSONRoundTrip100KB(b *testing.B) { benchRespBaseline(b, 100<<10) }

var benchRespChatAnswer = []byte(`{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","object":"chat.completion","created":1700000000,"model":"claude-sonnet-4-5",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"I'll check the cart total and then patch it.","tool_calls":[` +
	`{"id":"toolu_01A09q90qw90lq917835lq9","type":"function","function":{"name":"shell_command","arguments":"{\"command\":\"rg -n Total cart.go\"}"}},` +
	`{"id":"toolu_01B19q90qw90lq917835lq9","type":"function","function":{"name":"apply_patch--freeform","arguments":"{\"input\":\"*** Begin Patch\\n*** Update File: cart.go\\n-\\treturn sum\\n+\\treturn sum - c.Discount\\n*** End Patch\\n\"}"}}]},` +
	`"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":4200,"completion_tokens":161,"total_tokens":4361,"prompt_tokens_details":{"cached_tokens":3900}}}`)

func BenchmarkChatToResponses(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchRespChatAnswer)))
	b.RunParallel(func(pb *testing.PB) {
		var dst []byte
		for pb.Next() {
			var err error
			if dst, err = ChatToResponses(dst[:0], benchRespChatAnswer, []byte("gpt-5.1-codex")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchRespStreamEvent measures one Chunk call translating one delta. The
// stream is restarted every 4096 events so what it holds stays bounded;
// the restart's cost is spread over them.
func benchRespStreamEvent(b *testing.B, open, delta string) {
	var s Stream
	var dst []byte
	restart := func() {
		s = NewResponsesStream([]byte("gpt-5.1-codex"))
		var err error
		if dst, err = s.Chunk(dst[:0], []byte(open)); err != nil {
			b.Fatal(err)
		}
	}
	restart()
	b.ReportAllocs()
	b.SetBytes(int64(len(delta)))
	b.ResetTimer()
	for i := range b.N {
		if i%4096 == 4095 {
			restart()
		}
		var err error
		if dst, err = s.Chunk(dst[:0], []byte(delta)); err != nil || len(dst) == 0 {
			b.Fatal(err)
		}
	}
}

func BenchmarkResponsesStreamTextDelta(b *testing.B) {
	benchRespStreamEvent(b, respChunk(`{"role":"assistant","content":"I'll"}`, ""), respChunk(`{"content":" check the cart total and"}`, ""))
}

func BenchmarkResponsesStreamArgumentsDelta(b *testing.B) {
	benchRespStreamEvent(b, respChunk(`{"tool_calls":[{"index":0,"id":"toolu_01","type":"function","function":{"name":"mcp__github--create_issue","arguments":""}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"title\":\"Test Cart"}}]}`, ""))
}
