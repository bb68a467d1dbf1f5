package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/provider/providertest"
)

// The Anthropic SDK as the client of members that do not speak the
// Messages API (docs/providers.md, Translation): a tool round trip,
// non-stream and stream, through the gateway to an openai, an azure, a
// gemini, a vertex (Gemini model) and a bedrock (Converse, non-Claude)
// mock. Each answer the SDK parses is compared field by field with what
// the mock sent, and each chat body the mock received is read with
// openai-go's request types and checked against the mapping.

// turn is one answer a mock gives: the oracle the SDK's message is
// compared with.
type turn struct {
	id                         string
	text                       string
	toolID, toolName, toolArgs string
	finish                     string
	prompt, completion, cached int64
}

var (
	toolTurn = turn{id: "chatcmpl-tool1", toolID: "call_w1", toolName: "get_weather", toolArgs: `{"city":"Paris","unit":"c"}`,
		finish: "tool_calls", prompt: 120, completion: 17, cached: 100}
	textTurn = turn{id: "chatcmpl-text2", text: "It is 18\u00b0C and \"sunny\" in Paris.", finish: "stop", prompt: 160, completion: 9}
)

// turnFor picks the answer: the text once the conversation holds a tool
// result (chat's tool message, Converse's toolResult), else the tool call.
func turnFor(body []byte) turn {
	if strings.Contains(string(body), `"role":"tool"`) || strings.Contains(string(body), `"toolResult"`) {
		return textTurn
	}
	return toolTurn
}

func (a turn) usage() string {
	return fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}`,
		a.prompt, a.completion, a.prompt+a.completion, a.cached)
}

// chatCompletion is the answer as an OpenAI-compatible server sends it.
func (a turn) chatCompletion() string {
	msg := `{"role":"assistant","content":null,"refusal":null`
	if a.text != "" {
		t, _ := json.Marshal(a.text)
		msg = `{"role":"assistant","content":` + string(t) + `,"refusal":null`
	}
	if a.toolID != "" {
		args, _ := json.Marshal(a.toolArgs)
		msg += `,"tool_calls":[{"id":"` + a.toolID + `","type":"function","function":{"name":"` + a.toolName + `","arguments":` + string(args) + `}}]`
	}
	return `{"id":"` + a.id + `","object":"chat.completion","created":1730000000,"model":"upstream-model","system_fingerprint":"fp_x",` +
		`"choices":[{"index":0,"message":` + msg + `},"logprobs":null,"finish_reason":"` + a.finish + `"}],"usage":` + a.usage() + `}`
}

// chatChunks is the answer as an OpenAI-compatible stream: the text or
// the arguments in fragments, then the finish, the usage chunk, [DONE].
func (a turn) chatChunks() []string {
	head := `{"id":"` + a.id + `","object":"chat.completion.chunk","created":1730000000,"model":"upstream-model","choices":[{"index":0,"delta":`
	tail := `,"logprobs":null,"finish_reason":null}]}`
	out := []string{head + `{"role":"assistant","content":"","refusal":null}` + tail}
	if a.text != "" {
		for _, frag := range []string{a.text[:6], a.text[6:]} {
			t, _ := json.Marshal(frag)
			out = append(out, head+`{"content":`+string(t)+`}`+tail)
		}
	}
	if a.toolID != "" {
		out = append(out, head+`{"tool_calls":[{"index":0,"id":"`+a.toolID+`","type":"function","function":{"name":"`+a.toolName+`","arguments":""}}]}`+tail)
		for _, frag := range []string{a.toolArgs[:9], a.toolArgs[9:]} {
			f, _ := json.Marshal(frag)
			out = append(out, head+`{"tool_calls":[{"index":0,"function":{"arguments":`+string(f)+`}}]}`+tail)
		}
	}
	out = append(out, head+`{}`+`,"logprobs":null,"finish_reason":"`+a.finish+`"}]}`)
	out = append(out, `{"id":"`+a.id+`","object":"chat.completion.chunk","created":1730000000,"model":"upstream-model","choices":[],"usage":`+a.usage()+`}`)
	return append(out, "[DONE]")
}

// chatServer answers as an OpenAI-compatible chat endpoint.
func chatServer(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Stream bool `json:"stream"`
	}
	json.Unmarshal(body, &req) //nolint:errcheck
	a := turnFor(body)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(a.chatCompletion())) //nolint:errcheck
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range a.chatChunks() {
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
}

// converseServer answers as Bedrock's Converse and ConverseStream.
func converseServer(w http.ResponseWriter, r *http.Request, body []byte) {
	a := turnFor(body)
	stop := map[string]string{"stop": "end_turn", "tool_calls": "tool_use"}[a.finish]
	usage := fmt.Sprintf(`{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d,"cacheReadInputTokens":%d}`,
		a.prompt-a.cached, a.completion, a.prompt+a.completion, a.cached)
	if !strings.HasSuffix(r.URL.Path, "/converse-stream") {
		var content string
		if a.text != "" {
			t, _ := json.Marshal(a.text)
			content = `{"text":` + string(t) + `}`
		} else {
			content = `{"toolUse":{"toolUseId":"` + a.toolID + `","name":"` + a.toolName + `","input":` + a.toolArgs + `}}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"output":{"message":{"role":"assistant","content":[%s]}},"stopReason":"%s","usage":%s,"metrics":{"latencyMs":10}}`,
			content, stop, usage)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	events := []struct{ typ, payload string }{{"messageStart", `{"role":"assistant"}`}}
	if a.text != "" {
		for _, frag := range []string{a.text[:6], a.text[6:]} {
			t, _ := json.Marshal(frag)
			events = append(events, struct{ typ, payload string }{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":` + string(t) + `}}`})
		}
	} else {
		events = append(events, struct{ typ, payload string }{"contentBlockStart",
			`{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"` + a.toolID + `","name":"` + a.toolName + `"}}}`})
		for _, frag := range []string{a.toolArgs[:9], a.toolArgs[9:]} {
			f, _ := json.Marshal(frag)
			events = append(events, struct{ typ, payload string }{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":` + string(f) + `}}}`})
		}
	}
	events = append(events,
		struct{ typ, payload string }{"contentBlockStop", `{"contentBlockIndex":0}`},
		struct{ typ, payload string }{"messageStop", `{"stopReason":"` + stop + `"}`},
		struct{ typ, payload string }{"metadata", `{"usage":` + usage + `,"metrics":{"latencyMs":10}}`})
	enc := eventstream.NewEncoder()
	for _, e := range events {
		var m eventstream.Message
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Headers.Set(":event-type", eventstream.StringValue(e.typ))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Payload = []byte(e.payload)
		enc.Encode(w, m) //nolint:errcheck
		w.(http.Flusher).Flush()
	}
}

// serveWith makes a providerMock handler from a body-aware server.
func serveWith(m *providerMock, serve func(http.ResponseWriter, *http.Request, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, body := m.last()
		serve(w, r, body)
	}
}

// messagesParams is the client's first turn: a system prompt, a question
// and one tool.
func messagesParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-client",
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", Description: anthropic.String("Current weather"),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}}},
		Metadata: anthropic.MetadataParam{UserID: anthropic.String("user-7")},
	}
}

// ask sends params through the SDK, streamed or not, and returns the
// message it parsed (a stream accumulated event by event).
func ask(ctx context.Context, c anthropic.Client, params anthropic.MessageNewParams, stream bool) (anthropic.Message, error) {
	if !stream {
		m, err := c.Messages.New(ctx, params)
		if err != nil {
			return anthropic.Message{}, err
		}
		return *m, nil
	}
	s := c.Messages.NewStreaming(ctx, params)
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			return msg, err
		}
	}
	return msg, s.Err()
}

// checkMessage compares the SDK's message with the turn the mock sent.
func checkMessage(t *testing.T, what string, msg anthropic.Message, a turn, converse bool) {
	t.Helper()
	if msg.Type != "message" || msg.Role != "assistant" || msg.Model != "claude-client" || !strings.HasPrefix(msg.ID, "msg_") {
		t.Errorf("%s: type %q role %q model %q id %q", what, msg.Type, msg.Role, msg.Model, msg.ID)
	}
	if !converse && msg.ID != "msg_"+a.id {
		t.Errorf("%s: id %q, want msg_%s", what, msg.ID, a.id)
	}
	wantStop := map[string]anthropic.StopReason{"stop": "end_turn", "tool_calls": "tool_use"}[a.finish]
	if msg.StopReason != wantStop || len(msg.Content) != 1 {
		t.Fatalf("%s: stop %q, %d blocks: %+v", what, msg.StopReason, len(msg.Content), msg.Content)
	}
	b := msg.Content[0]
	if a.text != "" {
		if b.Type != "text" || b.Text != a.text {
			t.Errorf("%s: block %s %q, want text %q", what, b.Type, b.Text, a.text)
		}
	} else {
		var got, want any
		json.Unmarshal(b.Input, &got)             //nolint:errcheck
		json.Unmarshal([]byte(a.toolArgs), &want) //nolint:errcheck
		if b.Type != "tool_use" || b.ID != a.toolID || b.Name != a.toolName || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: block %s %s %s %s, want tool_use %s %s %s", what, b.Type, b.ID, b.Name, b.Input, a.toolID, a.toolName, a.toolArgs)
		}
	}
	if u := msg.Usage; u.InputTokens != a.prompt-a.cached || u.CacheReadInputTokens != a.cached || u.OutputTokens != a.completion {
		t.Errorf("%s: usage input %d cache_read %d output %d, want %d %d %d", what, u.InputTokens, u.CacheReadInputTokens,
			u.OutputTokens, a.prompt-a.cached, a.cached, a.completion)
	}
}

// checkChatRequest reads a chat body with openai-go's request type and
// checks it against the mapping for the turn it asked (second: with the
// tool round).
func checkChatRequest(t *testing.T, what string, body []byte, model string, stream, maxCompletion, second bool) {
	t.Helper()
	var p openai.ChatCompletionNewParams
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%s: chat body %s: %v", what, body, err)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal(body, &raw) //nolint:errcheck
	if p.Model != model || p.User.Value != "user-7" {
		t.Errorf("%s: model %q user %q", what, p.Model, p.User.Value)
	}
	hasMC := raw["max_completion_tokens"] != nil
	if maxCompletion != hasMC || (hasMC && p.MaxCompletionTokens.Value != 256) || (!hasMC && p.MaxTokens.Value != 256) {
		t.Errorf("%s: max_completion_tokens %v max_tokens %v", what, p.MaxCompletionTokens, p.MaxTokens)
	}
	if stream != (string(raw["stream"]) == "true") || stream != p.StreamOptions.IncludeUsage.Value {
		t.Errorf("%s: stream %s stream_options %s", what, raw["stream"], raw["stream_options"])
	}
	if len(p.Tools) != 1 || p.Tools[0].OfFunction == nil || p.Tools[0].OfFunction.Function.Name != "get_weather" ||
		p.Tools[0].OfFunction.Function.Description.Value != "Current weather" {
		t.Errorf("%s: tools %s", what, raw["tools"])
	}
	msgs := p.Messages
	wantN := 2
	if second {
		wantN = 4
	}
	if len(msgs) != wantN || msgs[0].OfSystem == nil || msgs[0].OfSystem.Content.OfString.Value != "Be brief." ||
		msgs[1].OfUser == nil || msgs[1].OfUser.Content.OfString.Value != "Weather in Paris?" {
		t.Fatalf("%s: messages %s", what, raw["messages"])
	}
	if !second {
		return
	}
	as, tool := msgs[2].OfAssistant, msgs[3].OfTool
	if as == nil || len(as.ToolCalls) != 1 || as.ToolCalls[0].OfFunction == nil || tool == nil {
		t.Fatalf("%s: tool round %s", what, raw["messages"])
	}
	tc := as.ToolCalls[0].OfFunction
	var got, want any
	json.Unmarshal([]byte(tc.Function.Arguments), &got) //nolint:errcheck
	json.Unmarshal([]byte(toolTurn.toolArgs), &want)    //nolint:errcheck
	if tc.ID != toolTurn.toolID || tc.Function.Name != toolTurn.toolName || !reflect.DeepEqual(got, want) ||
		tool.ToolCallID != toolTurn.toolID || tool.Content.OfString.Value != "18C, sunny" {
		t.Errorf("%s: tool round %s", what, raw["messages"])
	}
}

// checkConverseRequest checks a Converse body against the same mapping.
func checkConverseRequest(t *testing.T, what string, body []byte, second bool) {
	t.Helper()
	var c struct {
		System          []struct{ Text string } `json:"system"`
		InferenceConfig struct{ MaxTokens int } `json:"inferenceConfig"`
		Messages        []struct {
			Role    string `json:"role"`
			Content []struct {
				Text    string `json:"text"`
				ToolUse *struct {
					ToolUseID string         `json:"toolUseId"`
					Name      string         `json:"name"`
					Input     map[string]any `json:"input"`
				} `json:"toolUse"`
				ToolResult *struct {
					ToolUseID string `json:"toolUseId"`
					Content   []struct{ Text string }
				} `json:"toolResult"`
			} `json:"content"`
		} `json:"messages"`
		ToolConfig struct {
			Tools []struct {
				ToolSpec struct{ Name string } `json:"toolSpec"`
			} `json:"tools"`
		} `json:"toolConfig"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("%s: %s: %v", what, body, err)
	}
	if len(c.System) != 1 || c.System[0].Text != "Be brief." || c.InferenceConfig.MaxTokens != 256 || len(c.ToolConfig.Tools) != 1 ||
		c.ToolConfig.Tools[0].ToolSpec.Name != "get_weather" || len(c.Messages) == 0 || c.Messages[0].Content[0].Text != "Weather in Paris?" {
		t.Fatalf("%s: %s", what, body)
	}
	if second {
		if len(c.Messages) != 3 || c.Messages[1].Content[0].ToolUse == nil || c.Messages[1].Content[0].ToolUse.ToolUseID != toolTurn.toolID ||
			c.Messages[1].Content[0].ToolUse.Input["city"] != "Paris" || c.Messages[2].Content[0].ToolResult == nil ||
			c.Messages[2].Content[0].ToolResult.ToolUseID != toolTurn.toolID || c.Messages[2].Content[0].ToolResult.Content[0].Text != "18C, sunny" {
			t.Errorf("%s: tool round %s", what, body)
		}
	}
}

func TestTranslatedMessagesSDK(t *testing.T) {
	tok := newTokenMock(t, "google", 3600)
	saKey := serviceAccountKey(t, tok.srv.URL+"/token")
	for _, p := range []struct {
		name     string
		target   func(base string) config.Target
		path     string // the chat (or Converse) path the member sends to
		model    string // the model id sent upstream
		maxCompl bool
		converse bool
	}{
		{"openai", func(base string) config.Target {
			return config.Target{Provider: config.ProviderOpenAI, BaseURL: base + "/v1", APIKey: "sk-openai"}
		}, "/v1/chat/completions", "gpt-4o-mini", true, false},
		{"azure classic", func(base string) config.Target {
			return config.Target{Provider: config.ProviderAzure, BaseURL: base, APIKey: "az-key", Cloud: config.Cloud{AzureAPIVersion: "2024-10-21"}}
		}, "/openai/deployments/gpt-4o-mini/chat/completions", "gpt-4o-mini", true, false},
		{"gemini", func(base string) config.Target {
			return config.Target{Provider: config.ProviderGemini, BaseURL: base + "/v1beta/openai", APIKey: "gm-key"}
		}, "/v1beta/openai/chat/completions", "gemini-2.5-flash", false, false},
		{"vertex gemini", func(base string) config.Target {
			return config.Target{Provider: config.ProviderVertex, BaseURL: base, Region: "europe-west4",
				Cloud: config.Cloud{Project: "eu-proj-123", ServiceAccountKey: []byte(saKey)}}
		}, "/v1/projects/eu-proj-123/locations/europe-west4/endpoints/openapi/chat/completions", "google/gemini-2.5-flash", false, false},
		{"bedrock converse", func(base string) config.Target {
			return config.Target{Provider: config.ProviderBedrock, BaseURL: base, APIKey: "br-key", Region: "us-east-1"}
		}, "/model/mistral.mistral-large-2407-v1%3A0/converse", "mistral.mistral-large-2407-v1:0", false, true},
	} {
		for _, stream := range []bool{false, true} {
			name := p.name
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				m := newProviderMock(t)
				if p.converse {
					m.set(serveWith(m, converseServer))
				} else {
					m.set(serveWith(m, chatServer))
				}
				ct := p.target(m.srv.URL)
				ct.VirtualKey = "member"
				ct.ModelMap = map[string]string{"claude-client": p.model}
				url := cloudGateway(t, []*Target{cloudTarget(t, NewPool(), ct)})
				client := anthropic.NewClient(anthropicopt.WithBaseURL(url), anthropicopt.WithAPIKey("client-key"), anthropicopt.WithMaxRetries(0))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()

				params := messagesParams()
				msg1, err := ask(ctx, client, params, stream)
				if err != nil {
					t.Fatal(err)
				}
				checkMessage(t, "turn 1", msg1, toolTurn, p.converse)
				req1, body1 := m.last()
				wantPath := p.path
				if p.converse && stream {
					wantPath += "-stream"
				}
				if req1.URL.EscapedPath() != wantPath {
					t.Errorf("path %s, want %s", req1.URL.EscapedPath(), wantPath)
				}
				if p.converse {
					checkConverseRequest(t, "turn 1", body1, false)
				} else {
					checkChatRequest(t, "turn 1", body1, p.model, stream, p.maxCompl, false)
				}

				// The tool round: the SDK sends the tool_use back with its result.
				params.Messages = append(params.Messages, msg1.ToParam(),
					anthropic.NewUserMessage(anthropic.NewToolResultBlock(toolTurn.toolID, "18C, sunny", false)))
				msg2, err := ask(ctx, client, params, stream)
				if err != nil {
					t.Fatal(err)
				}
				checkMessage(t, "turn 2", msg2, textTurn, p.converse)
				_, body2 := m.last()
				if p.converse {
					checkConverseRequest(t, "turn 2", body2, true)
				} else {
					checkChatRequest(t, "turn 2", body2, p.model, stream, p.maxCompl, true)
				}
				if n := m.calls.Load(); n != 2 {
					t.Errorf("member called %d times, want 2", n)
				}
			})
		}
	}
}

// TestTranslatedResponsesSDK: the Responses translator wired as one more
// client API: the OpenAI SDK's Responses client through the gateway to an
// anthropic member (over its chat adapter, the Messages API) and an azure
// member on classic deployment URLs (over chat completions), stream and
// not; the answer comes back as a Response with the upstream's text and
// usage.
func TestTranslatedResponsesSDK(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, p := range []struct {
		name   string
		target func(base string) config.Target
		serve  http.HandlerFunc
		stream http.HandlerFunc
		path   string
		text   string
	}{
		{"anthropic", func(base string) config.Target {
			return config.Target{Provider: config.ProviderAnthropic, BaseURL: base, APIKey: "sk-ant"}
		}, anthropicOK(false), func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, providertest.MsgStart+providertest.MsgDelta+ //nolint:errcheck
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}\n\n"+providertest.MsgStop)
		}, "/v1/messages", ""},
		{"azure classic", func(base string) config.Target {
			return config.Target{Provider: config.ProviderAzure, BaseURL: base, APIKey: "az", Cloud: config.Cloud{AzureAPIVersion: "2024-10-21"}}
		}, openAIChatOK(false), nil, "/openai/deployments/gpt-4o/chat/completions", "hi"},
	} {
		m := newProviderMock(t)
		ct := p.target(m.srv.URL)
		ct.VirtualKey, ct.ModelMap = "member", map[string]string{"client-model": "gpt-4o"}
		url := cloudGateway(t, []*Target{cloudTarget(t, NewPool(), ct)})
		client := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
		params := responses.ResponseNewParams{Model: "client-model", Instructions: openai.String("Be brief."),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}

		m.set(p.serve)
		var hr *http.Response
		r, err := client.Responses.New(ctx, params, option.WithResponseInto(&hr))
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		want := p.text
		if want == "" {
			want = "hello from vertex"
		}
		if r.Status != "completed" || r.OutputText() != want || r.Model != "client-model" || r.Usage.OutputTokens == 0 {
			t.Errorf("%s: %+v", p.name, r)
		}
		if req, body := m.last(); req.URL.Path != p.path || !strings.Contains(string(body), "Be brief.") {
			t.Errorf("%s: sent %s %s", p.name, req.URL.Path, body)
		}
		if p.stream == nil {
			continue
		}
		m.set(p.stream)
		s := client.Responses.NewStreaming(ctx, params)
		var done responses.Response
		for s.Next() {
			if ev := s.Current(); ev.Type == "response.completed" {
				done = ev.Response
			}
		}
		if err := s.Err(); err != nil || done.Status != "completed" || done.OutputText() != "Hello" {
			t.Errorf("%s stream: %v %+v", p.name, err, done)
		}
	}
}
