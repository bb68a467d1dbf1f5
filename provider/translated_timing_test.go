package provider

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/internal/cputime"
	"github.com/switchyard/switchyard/router"
)

// The cost of serving the Messages API by translation, beside the native
// paths it stands in for (docs/benchmarks.md): building a request from a
// Claude Code-like body of 10 KB and 100 KB (native: the pass-through, the
// body as sent or with model_map's rewrite; translated: to chat for an
// openai member), and relaying one streamed text event (native: the
// Messages event relay; translated: a chat chunk in, a Messages event out).
//
//	go test ./provider -run '^$' -bench 'MessagesBuild|MessagesStreamEvent' -cpu 1 -count 5
//
// cpu-ns/op is the process's CPU time per operation (see reportCPU).

// benchMessagesBody returns a Messages request of about size bytes as a
// coding tool such as Claude Code sends it: system blocks, tools with
// schemas, and a history of turns with tool calls and results (quotes,
// newlines and non-ASCII text included), the last turn a question.
func benchMessagesBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"claude-client","max_tokens":8192,"stream":true,"metadata":{"user_id":"user_4f2a_account__session_9c1e"},`)
	b.WriteString(`"system":[{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude."},`)
	b.WriteString(`{"type":"text","text":"You are an interactive CLI tool that helps users with software engineering tasks.\nUse the tools available to you.\n\n# Tone\nBe concise, direct, and to the point.","cache_control":{"type":"ephemeral"}}],`)
	b.WriteString(`"tools":[`)
	for i, name := range []string{"Read", "Edit", "Bash"} {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":%q,"description":"Runs %s on the user's machine. Use it when the task needs it; never guess a path.",`+
			`"input_schema":{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path"},`+
			`"limit":{"type":"number"},"old_string":{"type":"string"}},"required":["file_path"],"additionalProperties":false}}`, name, name)
	}
	b.WriteString(`],"messages":[`)
	for turn := 0; ; turn++ {
		if turn > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"text","text":"Step %d: fix the failing test in router/match.go \u2014 it says \"want 3, got 4\"."}]},`, turn)
		fmt.Fprintf(&b, `{"role":"assistant","content":[{"type":"text","text":"Let me read the file first."},`+
			`{"type":"tool_use","id":"toolu_%04d","name":"Read","input":{"file_path":"/repo/router/match.go","limit":200}}]},`, turn)
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%04d","content":"     1\tpackage router\n     2\t\n     3\t// Match returns the first rule that matches.\n     4\tfunc (s *Snapshot) Match(r *Request) (int, []int) {\n     5\t\tif r == nil {\n     6\t\t\treturn -1, nil\n     7\t\t}\n     8\t\treturn s.match(r, \"default\")\n     9\t}\n"}]}`, turn)
		if b.Len() >= size {
			break
		}
	}
	b.WriteString(`,{"role":"user","content":"Now run the tests."}]}`)
	return []byte(b.String())
}

func BenchmarkMessagesBuild(b *testing.B) {
	for _, size := range []int{10 << 10, 100 << 10} {
		body := benchMessagesBody(size)
		label := fmt.Sprintf("%dKB", size>>10)
		for _, v := range []struct {
			name     string
			a        Adapter
			upstream string
		}{
			{"native_as_sent", messagesAdapter{}, "claude-client"},
			{"native_rewrite", messagesAdapter{}, "claude-sonnet-4-5-20250929"},
			{"translated_openai", openAIMessages, "gpt-4o"},
		} {
			b.Run(v.name+"/"+label, func(b *testing.B) {
				ep := &Endpoint{BaseURL: "https://api.example.com/v1", APIKey: "sk-test"}
				ep.Prepare(OpenAIAdapter{})
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				defer reportCPU(b, cputime.Process())
				b.RunParallel(func(pb *testing.PB) {
					req := fasthttp.AcquireRequest()
					defer fasthttp.ReleaseRequest(req)
					c := &Call{Surface: router.SurfaceMessages, Stream: true, Body: body, Model: []byte("claude-client")}
					for pb.Next() {
						req.Reset()
						if err := v.a.BuildRequest(req, ep, c, []byte(v.upstream)); err != nil {
							b.Fatal(err)
						}
						c.ReleaseTranslation() // as the walk does at its end
					}
				})
			})
		}
	}
}

// reportCPU reports the process's CPU time per operation since cpu0: on a
// shared machine it says more than the wall time.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
}

// benchStream measures one Next (one client event) of dec over the
// upstream's event repeated, with the relay's write and flush.
func benchStream(b *testing.B, dec StreamDecoder, event []byte) {
	r := bufio.NewReaderSize(&cycleReader{data: event}, 16<<10)
	bw := bufio.NewWriterSize(io.Discard, 4096)
	var dst []byte
	// The first event opens the message; the benchmark is the steady state.
	dst, _ = dec.Next(dst, r)
	b.ReportAllocs()
	b.SetBytes(int64(len(event)))
	b.ResetTimer()
	defer reportCPU(b, cputime.Process())
	for range b.N {
		var err error
		if dst, err = dec.Next(dst[:0], r); err != nil || len(dst) == 0 {
			b.Fatal(err)
		}
		bw.Write(dst) //nolint:errcheck // io.Discard
		bw.Flush()    //nolint:errcheck
	}
}

func BenchmarkMessagesStreamEvent(b *testing.B) {
	b.Run("native_relay", func(b *testing.B) {
		c := &Call{Surface: router.SurfaceMessages, Stream: true, Model: []byte("claude-client")}
		benchStream(b, messagesAdapter{}.NewStream(c), relayEventMessages)
	})
	// The chat relay of the same chunk: what the translation adds to.
	b.Run("chat_relay", func(b *testing.B) {
		benchStream(b, &SSEDecoder{}, relayEventChat)
	})
	b.Run("translated_openai", func(b *testing.B) {
		c := &Call{Surface: router.SurfaceMessages, Stream: true, Body: benchMessagesBody(1), Model: []byte("claude-client")}
		var req fasthttp.Request
		if err := openAIMessages.BuildRequest(&req, &Endpoint{BaseURL: "http://x/v1"}, c, []byte("gpt-4o")); err != nil {
			b.Fatal(err)
		}
		dec := openAIMessages.NewStream(c)
		c.ReleaseTranslation()
		benchStream(b, dec, relayEventChat)
	})
}

// benchResponsesBody is benchMessagesBody's conversation as a Responses
// request, as Codex sends one: instructions, function tools, the turns as
// message, function_call and function_call_output items.
func benchResponsesBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-client","max_output_tokens":8192,"stream":true,"user":"user_4f2a_account__session_9c1e",`)
	b.WriteString(`"instructions":"You are Claude Code, Anthropic's official CLI for Claude.\n\nYou are an interactive CLI tool that helps users with software engineering tasks.\nUse the tools available to you.\n\n# Tone\nBe concise, direct, and to the point.",`)
	b.WriteString(`"tools":[`)
	for i, name := range []string{"Read", "Edit", "Bash"} {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"function","name":%q,"description":"Runs %s on the user's machine. Use it when the task needs it; never guess a path.",`+
			`"parameters":{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path"},`+
			`"limit":{"type":"number"},"old_string":{"type":"string"}},"required":["file_path"],"additionalProperties":false}}`, name, name)
	}
	b.WriteString(`],"input":[`)
	for turn := 0; ; turn++ {
		if turn > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"input_text","text":"Step %d: fix the failing test in router/match.go \u2014 it says \"want 3, got 4\"."}]},`, turn)
		b.WriteString(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me read the file first."}]},`)
		fmt.Fprintf(&b, `{"type":"function_call","call_id":"toolu_%04d","name":"Read","arguments":"{\"file_path\":\"/repo/router/match.go\",\"limit\":200}"},`, turn)
		fmt.Fprintf(&b, `{"type":"function_call_output","call_id":"toolu_%04d","output":"     1\tpackage router\n     2\t\n     3\t// Match returns the first rule that matches.\n     4\tfunc (s *Snapshot) Match(r *Request) (int, []int) {\n     5\t\tif r == nil {\n     6\t\t\treturn -1, nil\n     7\t\t}\n     8\t\treturn s.match(r, \"default\")\n     9\t}\n"}`, turn)
		if b.Len() >= size {
			break
		}
	}
	b.WriteString(`,{"role":"user","content":"Now run the tests."}]}`)
	return []byte(b.String())
}

// The Responses API's twin of BenchmarkMessagesBuild: native on an openai
// member (the pass-through, as sent or with model_map's rewrite),
// translated to chat for a gemini member.
//
//	go test ./provider -run '^$' -bench 'ResponsesBuild|ResponsesStreamEvent' -cpu 1 -count 5
func BenchmarkResponsesBuild(b *testing.B) {
	for _, size := range []int{10 << 10, 100 << 10} {
		body := benchResponsesBody(size)
		label := fmt.Sprintf("%dKB", size>>10)
		for _, v := range []struct {
			name     string
			a        Adapter
			upstream string
		}{
			{"native_as_sent", OpenAIAdapter{}, "gpt-client"},
			{"native_rewrite", OpenAIAdapter{}, "gpt-5.1-codex"},
			{"translated_gemini", geminiResponses, "gemini-2.5-pro"},
		} {
			b.Run(v.name+"/"+label, func(b *testing.B) {
				ep := &Endpoint{BaseURL: "https://api.example.com/v1", APIKey: "sk-test"}
				ep.Prepare(OpenAIAdapter{})
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				defer reportCPU(b, cputime.Process())
				b.RunParallel(func(pb *testing.PB) {
					req := fasthttp.AcquireRequest()
					defer fasthttp.ReleaseRequest(req)
					c := &Call{Surface: router.SurfaceResponses, Stream: true, Body: body, Model: []byte("gpt-client")}
					for pb.Next() {
						req.Reset()
						if err := v.a.BuildRequest(req, ep, c, []byte(v.upstream)); err != nil {
							b.Fatal(err)
						}
						c.ReleaseTranslation() // as the walk does at its end
					}
				})
			})
		}
	}
}

func BenchmarkResponsesStreamEvent(b *testing.B) {
	b.Run("native_relay", func(b *testing.B) {
		c := &Call{Surface: router.SurfaceResponses, Stream: true, Model: []byte("gpt-client")}
		benchStream(b, OpenAIAdapter{}.NewStream(c), relayEventResponses)
	})
	// A Responses stream holds the text it has streamed (its done events
	// repeat it), up to 16 MiB: the stream starts over every 4096 events,
	// its start spread over them, as in the translator's own benchmark.
	b.Run("translated_gemini", func(b *testing.B) {
		body := benchResponsesBody(1)
		benchStream(b, &restartingDecoder{every: 4096, open: func() StreamDecoder {
			c := &Call{Surface: router.SurfaceResponses, Stream: true, Body: body, Model: []byte("gpt-client")}
			var req fasthttp.Request
			if err := geminiResponses.BuildRequest(&req, &Endpoint{BaseURL: "http://x/v1"}, c, []byte("gemini-2.5-pro")); err != nil {
				b.Fatal(err)
			}
			dec := geminiResponses.NewStream(c)
			c.ReleaseTranslation()
			return dec
		}}, relayEventChat)
	})
}

// restartingDecoder runs the decoder open makes, replacing it (released)
// every every events.
type restartingDecoder struct {
	open  func() StreamDecoder
	every int
	n     int
	dec   StreamDecoder
}

func (d *restartingDecoder) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	if d.n%d.every == 0 {
		if d.dec != nil {
			ReleaseDecoder(d.dec)
		}
		d.dec = d.open()
	}
	d.n++
	return d.dec.Next(dst, r)
}
