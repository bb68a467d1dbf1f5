package upstream

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

func endOf(t *testing.T, rec *recObserver) Result {
	t.Helper()
	select {
	case r := <-rec.ends:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end")
	}
	return Result{}
}

func TestWalkReportsUsage(t *testing.T) {
	full := Usage{Prompt: 8, Completion: 5, HasPrompt: true, HasCompletion: true}
	body := func(usage string) func(*fasthttp.RequestCtx, int) {
		return status(200, `{"id":"x","choices":[{"message":{"content":"\"usage\":{\"prompt_tokens\":99}"}}]`+usage+`}`)
	}
	for name, tc := range map[string]struct {
		handle func(*fasthttp.RequestCtx, int)
		want   Usage
	}{
		"usage":    {body(`,"usage":{"prompt_tokens":8,"completion_tokens":5,"total_tokens":13}`), full},
		"none":     {body(``), Usage{}},
		"null":     {body(`,"usage":null`), Usage{}},
		"nested":   {status(200, `{"choices":[{"usage":{"prompt_tokens":99,"completion_tokens":99}}]}`), Usage{}},
		"failed":   {status(500, `{"error":{"message":"x"},"usage":{"prompt_tokens":8,"completion_tokens":5}}`), Usage{}},
		"refusal":  {status(400, `{"error":{"message":"x"},"usage":{"prompt_tokens":8,"completion_tokens":5}}`), Usage{}},
		"embedded": {status(200, `{"data":[{"embedding":[0.1]}],"usage":{"prompt_tokens":8,"total_tokens":8}}`), Usage{Prompt: 8, HasPrompt: true}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.mock("a", tc.handle)
			_, res := h.walk(chatCall(false), []*Target{h.target("a", nil)}, 5*time.Second, nil)
			if res.Usage != tc.want {
				t.Fatalf("usage %+v, want %+v", res.Usage, tc.want)
			}
		})
	}
}

func TestWalkReportsStreamUsage(t *testing.T) {
	chunk := `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"\"usage\":{\"prompt_tokens\":99}"}}],"usage":null}` + "\n\n"
	final := `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":21,"total_tokens":29}}` + "\n\n"
	done := "data: [DONE]\n\n"
	for name, tc := range map[string]struct {
		events []string
		want   Usage
	}{
		"final usage chunk": {[]string{chunk, chunk, final, done}, Usage{Prompt: 8, Completion: 21, HasPrompt: true, HasCompletion: true}},
		"running usage": {[]string{
			`data: {"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":1}}` + "\n\n",
			`data: {"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2}}` + "\n\n", done,
		}, Usage{Prompt: 8, Completion: 2, HasPrompt: true, HasCompletion: true}},
		"no usage chunk":  {[]string{chunk, chunk, done}, Usage{}},
		"cut after usage": {[]string{chunk, final}, Usage{}}, // not a successful answer
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.mock("a", sse(0, tc.events...))
			rec := newRec()
			rc, res := h.walk(chatCall(true), []*Target{h.target("a", nil)}, 5*time.Second, rec)
			if !res.Stream {
				t.Fatalf("not committed: %d %s", res.Status, rc.Response.Body())
			}
			streamBody(t, rc)
			if got := endOf(t, rec).Usage; got != tc.want {
				t.Fatalf("usage %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Translated streams report the provider's usage whether or not the client
// asked for the usage chunk.
func TestWalkReportsTranslatedStreamUsage(t *testing.T) {
	events := []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":12}}\n\n",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	}
	h := newHarness(t)
	h.mock("a", sse(0, events...))
	tg := h.target("a", func(ct *config.Target) { ct.Provider, ct.BaseURL = config.ProviderAnthropic, "http://a" })
	rec := newRec()
	rc, res := h.walk(chatCall(true), []*Target{tg}, 5*time.Second, rec)
	if !res.Stream {
		t.Fatalf("not committed: %d %s", res.Status, rc.Response.Body())
	}
	streamBody(t, rc)
	want := Usage{Prompt: 7, Completion: 12, HasPrompt: true, HasCompletion: true}
	if got := endOf(t, rec).Usage; got != want {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
}

// The named-event surfaces (Responses, Messages pass-through) report the
// usage of their terminal events; a content string quoting usage does not
// count, and a stream without its terminal event counts nothing.
func TestWalkReportsEventStreamUsage(t *testing.T) {
	responses := []string{
		"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"usage\":null}}\n\n",
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"\\\"usage\\\":{\\\"input_tokens\\\":99}\"}\n\n",
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[{\"content\":[{\"text\":\"\\\"usage\\\":{\\\"input_tokens\\\":99}\"}]}],\"usage\":{\"input_tokens\":11,\"input_tokens_details\":{\"cached_tokens\":4},\"output_tokens\":7,\"total_tokens\":18,\"output_tokens_details\":{\"reasoning_tokens\":2}}}}\n\n",
	}
	messages := []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":10,\"output_tokens\":1}}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	}
	for _, tc := range []struct {
		name   string
		call   *Call
		anth   bool
		events []string
		want   Usage
	}{
		{"responses", responsesCall(true), false, responses, Usage{Prompt: 11, CacheRead: 4, Completion: 7, HasPrompt: true, HasCompletion: true}},
		{"responses incomplete", responsesCall(true), false, []string{responses[0], responses[1],
			strings.Replace(strings.ReplaceAll(responses[2], "response.completed", "response.incomplete"), `\"id\":\"r\",`, `\"id\":\"r\",\"status\":\"incomplete\",`, 1)},
			Usage{Prompt: 11, CacheRead: 4, Completion: 7, HasPrompt: true, HasCompletion: true}},
		{"responses cut", responsesCall(true), false, responses[:2], Usage{}},
		{"messages", messagesCall(true), true, messages, Usage{Prompt: 15, CacheRead: 10, Completion: 9, HasPrompt: true, HasCompletion: true}},
		{"messages cut", messagesCall(true), true, messages[:3], Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mock("a", sse(0, tc.events...))
			tg := h.target("a", func(ct *config.Target) {
				ct.Models = nil
				if tc.anth {
					ct.Provider, ct.BaseURL = config.ProviderAnthropic, "http://a"
				}
			})
			rec := newRec()
			rc, res := h.walk(tc.call, []*Target{tg}, 5*time.Second, rec)
			if !res.Stream {
				t.Fatalf("not committed: %d %s", res.Status, rc.Response.Body())
			}
			streamBody(t, rc)
			if got := endOf(t, rec).Usage; got != tc.want {
				t.Fatalf("usage %+v, want %+v", got, tc.want)
			}
		})
	}
}

// shapeless wraps an adapter and answers the client in a shape without
// usage, as a client API with no field for a count would: the walk must
// still count the provider's usage, from the provider's own answer.
type shapeless struct{ Adapter }

func (shapeless) TranslateResponse(dst, _ []byte, _ *Call) ([]byte, error) {
	return append(dst, `{"id":"x"}`...), nil
}

// delegating is shapeless that reads the usage itself (a wrapping adapter
// delegating to another reader), here a fixed one.
type delegating struct{ shapeless }

func (delegating) AnswerUsage([]byte) (Usage, bool) {
	return Usage{Prompt: 1, CacheRead: 1, HasPrompt: true}, true
}

// TestWalkReadsUsageFromProviderAnswer: the usage counted is the
// provider's own, in four parts: an Anthropic answer's cache writes and
// reads survive the translation to chat (the client's body says them
// too), survive a client shape that has no usage at all, and an adapter
// that reads its answers itself is asked instead.
func TestWalkReadsUsageFromProviderAnswer(t *testing.T) {
	const answer = `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",` +
		`"usage":{"input_tokens":3,"cache_creation_input_tokens":10,"cache_read_input_tokens":20,"output_tokens":4}}`
	want := Usage{Prompt: 33, CacheRead: 20, CacheWrite: 10, Completion: 4, HasPrompt: true, HasCompletion: true}
	for name, tc := range map[string]struct {
		wrap func(Adapter) Adapter
		want Usage
		body string
	}{
		"translated": {func(a Adapter) Adapter { return a }, want,
			`"usage":{"prompt_tokens":33,"completion_tokens":4,"total_tokens":37,"prompt_tokens_details":{"cached_tokens":20,"cache_write_tokens":10}}`},
		"client shape without usage": {func(a Adapter) Adapter { return shapeless{a} }, want, `{"id":"x"}`},
		"adapter reads its own":      {func(a Adapter) Adapter { return delegating{shapeless{a}} }, Usage{Prompt: 1, CacheRead: 1, HasPrompt: true}, `{"id":"x"}`},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.mock("a", status(200, answer))
			tg := h.target("a", func(c *config.Target) { c.Provider, c.BaseURL = config.ProviderAnthropic, "http://a" })
			tg.Adapter = tc.wrap(tg.Adapter)
			rc, res := h.walk(chatCall(false), []*Target{tg}, 5*time.Second, nil)
			if res.Status != 200 || res.Usage != tc.want {
				t.Fatalf("status %d usage %+v, want %+v (%s)", res.Status, res.Usage, tc.want, rc.Response.Body())
			}
			if !strings.Contains(string(rc.Response.Body()), tc.body) {
				t.Fatalf("client body %s lacks %s", rc.Response.Body(), tc.body)
			}
		})
	}
}
