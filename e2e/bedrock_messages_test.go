package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/switchyard/switchyard/daemon"
)

// Claude Code on Bedrock (docs/providers.md): the plain anthropic SDK, as
// Claude Code uses it, through the whole gateway to a [anthropic, bedrock]
// chain whose bedrock member answers InvokeModel from a recording mock, and
// a spare target outside every chain that must never be called.

const (
	cantKey   = "sk-ant-cc-target"
	cbedKey   = "bedrock-cc-target"
	spareKey  = "sk-spare-target"
	ccClaudeB = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

// claudeCodeYAML: claude-* → [ant, bed]; bedfirst-* → [bed, ant]; spare
// (targets[0], the fallback) serves any model and is in no chain.
// Arguments: ant root, bedrock root, spare root.
const claudeCodeYAML = `server:
  listen: 127.0.0.1:0
  request_timeout: 10s
log:
  level: error
  access_log: false
strategy:
  mode: conditional
  conditions:
    - {key: model_prefix, value: claude-, target_keys: [ant, bed]}
    - {key: model_prefix, value: bedfirst-, target_keys: [bed, ant]}
targets:
  - {virtual_key: spare, provider: anthropic, base_url: "%[3]s", api_key: ` + spareKey + `, timeout: 5s}
  - virtual_key: ant
    provider: anthropic
    base_url: "%[1]s"
    api_key: ` + cantKey + `
    models: ["claude-*", "bedfirst-*"]
    model_map: {bedfirst-sonnet: claude-sonnet-4-5}
    timeout: 5s
  - virtual_key: bed
    provider: bedrock
    base_url: "%[2]s"
    region: us-east-1
    api_key: ` + cbedKey + `
    models: ["claude-*", "bedfirst-*"]
    model_map: {claude-sonnet: ` + ccClaudeB + `, bedfirst-sonnet: ` + ccClaudeB + `}
    timeout: 5s
`

type ccEnv struct {
	ant, bed, spare *apiMock
	base            string
	client          anthropic.Client
}

// invokeEvents is the message the Bedrock mock streams; its usage is 7
// input, 100 cache write, 900 cache read, 3 output tokens.
var invokeEvents = []string{
	`{"type":"message_start","message":{"id":"msg_bdrk_cc","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"cache_creation_input_tokens":100,"cache_read_input_tokens":900,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello from "}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Bedrock"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`,
	`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":7,"outputTokenCount":3,"invocationLatency":100,"firstByteLatency":50}}`,
}

const invokeAnswer = `{"id":"msg_bdrk_cc","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
	`"content":[{"type":"text","text":"Hello from Bedrock"}],"stop_reason":"end_turn","stop_sequence":null,` +
	`"usage":{"input_tokens":7,"cache_creation_input_tokens":100,"cache_read_input_tokens":900,"output_tokens":3}}`

// invokeStream answers with event-stream chunk frames (real CRCs) for
// events, then exception frames given as type, message pairs.
func invokeStream(events []string, exception ...string) step {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		enc := eventstream.NewEncoder()
		write := func(m eventstream.Message) {
			enc.Encode(w, m) //nolint:errcheck
			w.(http.Flusher).Flush()
		}
		for _, e := range events {
			var m eventstream.Message
			m.Headers.Set(":event-type", eventstream.StringValue("chunk"))
			m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			m.Headers.Set(":message-type", eventstream.StringValue("event"))
			m.Payload, _ = json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(e))})
			write(m)
		}
		for i := 0; i+1 < len(exception); i += 2 {
			var m eventstream.Message
			m.Headers.Set(":exception-type", eventstream.StringValue(exception[i]))
			m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			m.Headers.Set(":message-type", eventstream.StringValue("exception"))
			m.Payload, _ = json.Marshal(map[string]string{"message": exception[i+1]})
			write(m)
		}
	}
}

// startInvokeMock is a Bedrock runtime answering InvokeModel, its stream
// and CountTokens for requests bearing key.
func startInvokeMock(t *testing.T, key string) *apiMock {
	auth := func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+key }
	return startAPIMock(t, "bed", auth, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/invoke"):
			jsonAnswer(200, invokeAnswer)(w, r, body)
		case strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream"):
			invokeStream(invokeEvents)(w, r, body)
		case strings.HasSuffix(r.URL.Path, "/count-tokens"):
			jsonAnswer(200, `{"inputTokens":4321}`)(w, r, body)
		default:
			jsonAnswer(404, `{"message":"unknown operation"}`)(w, r, body)
		}
	})
}

func newCCEnv(t *testing.T) *ccEnv {
	t.Helper()
	e := &ccEnv{ant: startMessagesMock(t, "ant", cantKey), bed: startInvokeMock(t, cbedKey), spare: startMessagesMock(t, "spare", spareKey)}
	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(claudeCodeYAML, e.ant.srv.URL, e.bed.srv.URL, e.spare.srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	d, err := daemon.New(path, "127.0.0.1:0", logs)
	if err != nil {
		t.Fatalf("daemon.New: %v\n%s", err, logs)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	e.base = "http://" + d.Addr().String()
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	// Claude Code's headers: its first-party beta flags among the ones
	// Bedrock takes.
	e.client = anthropic.NewClient(aoption.WithBaseURL(e.base), aoption.WithAPIKey(clientKey), aoption.WithMaxRetries(0),
		aoption.WithHTTPClient(&http.Client{Timeout: 10 * time.Second, Transport: tr}),
		aoption.WithHeader("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"))
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

// wantCalls checks each mock's request count; the spare is never called.
func (e *ccEnv) wantCalls(t *testing.T, ant, bed int) {
	t.Helper()
	if e.ant.n() != ant || e.bed.n() != bed || e.spare.n() != 0 {
		t.Errorf("calls ant %d, bed %d, spare %d; want %d, %d, 0", e.ant.n(), e.bed.n(), e.spare.n(), ant, bed)
	}
}

// bedTokens sums every switchyard_tokens_total series of target bed,
// whatever its kinds.
func (e *ccEnv) bedTokens(t *testing.T) float64 {
	t.Helper()
	resp, err := http.Get(e.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if ln := sc.Text(); strings.HasPrefix(ln, `switchyard_tokens_total{target="bed",`) {
			v, err := strconv.ParseFloat(ln[strings.LastIndexByte(ln, ' ')+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
		}
	}
	return sum
}

// wantBedrockRequest checks what InvokeModel received.
func wantBedrockRequest(t *testing.T, rq received, op string) {
	t.Helper()
	if rq.method != "POST" || rq.uri != "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/"+op {
		t.Errorf("bedrock got %s %s", rq.method, rq.uri)
	}
	var body map[string]any
	if err := json.Unmarshal(rq.body, &body); err != nil {
		t.Fatalf("body %s", rq.body)
	}
	betas, _ := json.Marshal(body["anthropic_beta"])
	if body["model"] != nil || body["stream"] != nil || body["anthropic_version"] != "bedrock-2023-05-31" ||
		string(betas) != `["interleaved-thinking-2025-05-14"]` || body["messages"] == nil {
		t.Errorf("body %s", rq.body)
	}
	for k, vs := range rq.header {
		for _, v := range vs {
			if strings.Contains(v, clientKey) {
				t.Errorf("the client's key reached bedrock in %s", k)
			}
		}
	}
	if rq.header.Get("Anthropic-Beta") != "" || rq.header.Get("Anthropic-Version") != "" || rq.header.Get("X-Api-Key") != "" {
		t.Errorf("headers %v", rq.header)
	}
}

func ccStream(t *testing.T, c anthropic.Client, model string) (anthropic.Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := c.Messages.NewStreaming(ctx, messageParams(model))
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	return msg, s.Err()
}

func TestClaudeCodeOnBedrockFailover(t *testing.T) {
	t.Run("anthropic 503, a Messages answer from bedrock", func(t *testing.T) {
		e := newCCEnv(t)
		e.ant.then(jsonAnswer(503, anthropicErr("overloaded_error", "Overloaded")))
		before := e.bedTokens(t)
		var resp *http.Response
		msg, err := e.client.Messages.New(testCtxSurf(t), messageParams("claude-sonnet"), aoption.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if msg.ID != "msg_bdrk_cc" || len(msg.Content) != 1 || msg.Content[0].Text != "Hello from Bedrock" || msg.Usage.CacheReadInputTokens != 900 {
			t.Errorf("message %s", msg.RawJSON())
		}
		if resp.Header.Get("X-Gateway-Target") != "bed" || resp.Header.Get("X-Gateway-Attempts") != "2" ||
			resp.Header.Get("X-Gateway-Model") != ccClaudeB {
			t.Errorf("headers %v", resp.Header)
		}
		e.wantCalls(t, 1, 1)
		wantBedrockRequest(t, e.bed.last(t), "invoke")
		if d := e.bedTokens(t) - before; d != 7+100+900+3 {
			t.Errorf("bedrock's tokens moved by %v, want 1010", d)
		}
	})

	t.Run("anthropic 503, a Messages stream from bedrock", func(t *testing.T) {
		e := newCCEnv(t)
		e.ant.then(jsonAnswer(503, anthropicErr("overloaded_error", "Overloaded")))
		before := e.bedTokens(t)
		msg, err := ccStream(t, e.client, "claude-sonnet")
		if err != nil {
			t.Fatal(err)
		}
		var want anthropic.Message
		if err := want.UnmarshalJSON([]byte(invokeAnswer)); err != nil {
			t.Fatal(err)
		}
		if msg.ID != want.ID || msg.Model != want.Model || msg.StopReason != want.StopReason || len(msg.Content) != 1 ||
			msg.Content[0].Text != "Hello from Bedrock" || msg.Usage.InputTokens != 7 || msg.Usage.CacheCreationInputTokens != 100 ||
			msg.Usage.CacheReadInputTokens != 900 || msg.Usage.OutputTokens != 3 {
			t.Errorf("accumulated %s\n want %s", msg.RawJSON(), invokeAnswer)
		}
		e.wantCalls(t, 1, 1)
		wantBedrockRequest(t, e.bed.last(t), "invoke-with-response-stream")
		// The stream's record lands as its writer ends.
		waitFor(t, 5*time.Second, "bedrock's tokens", func() bool { return e.bedTokens(t)-before == 1010 })
	})

	t.Run("anthropic's error event first, the stream from bedrock", func(t *testing.T) {
		e := newCCEnv(t)
		e.ant.then(messagesErrorEvent("overloaded_error", "Overloaded"))
		msg, err := ccStream(t, e.client, "claude-sonnet")
		if err != nil || msg.Content[0].Text != "Hello from Bedrock" {
			t.Fatalf("%v %s", err, msg.RawJSON())
		}
		e.wantCalls(t, 1, 1)
	})

	t.Run("bedrock's throttling exception first, the stream from anthropic", func(t *testing.T) {
		e := newCCEnv(t)
		e.bed.then(invokeStream(nil, "throttlingException", "Too many tokens, please wait before trying again."))
		msg, err := ccStream(t, e.client, "bedfirst-sonnet")
		if err != nil || msg.ID != "msg_ant" || msg.Model != "claude-sonnet-4-5" {
			t.Fatalf("%v %s", err, msg.RawJSON())
		}
		e.wantCalls(t, 1, 1)
	})

	// message_start is held back until the event after it: an exception
	// there still comes before the client's first byte.
	t.Run("bedrock's exception right after message_start, the stream from anthropic", func(t *testing.T) {
		e := newCCEnv(t)
		e.bed.then(invokeStream(invokeEvents[:1], "serviceUnavailableException", "Bedrock is unable to process your request."))
		msg, err := ccStream(t, e.client, "bedfirst-sonnet")
		if err != nil || msg.ID != "msg_ant" {
			t.Fatalf("%v %s", err, msg.RawJSON())
		}
		e.wantCalls(t, 1, 1)
	})

	t.Run("anthropic 503, bedrock throttled: 429 in Anthropic's envelope", func(t *testing.T) {
		e := newCCEnv(t)
		e.ant.then(jsonAnswer(503, anthropicErr("overloaded_error", "Overloaded")))
		e.bed.then(invokeStream(nil, "throttlingException", "Too many tokens"))
		_, err := ccStream(t, e.client, "claude-sonnet")
		ae := anthropicAPIError(t, err)
		if ae.StatusCode != 429 || string(ae.Type()) != "rate_limit_error" || ae.Response.Header.Get("Retry-After") == "" {
			t.Errorf("%d %s", ae.StatusCode, ae.RawJSON())
		}
		e.wantCalls(t, 1, 1)
	})

	t.Run("bedrock's exception after the first event: Anthropic's error event", func(t *testing.T) {
		e := newCCEnv(t)
		e.ant.then(jsonAnswer(503, anthropicErr("overloaded_error", "Overloaded")))
		e.bed.then(invokeStream(invokeEvents[:3], "modelStreamErrorException", "The model stream broke."))
		msg, err := ccStream(t, e.client, "claude-sonnet")
		if err == nil || !strings.Contains(err.Error(), "The model stream broke.") {
			t.Fatalf("stream error %v", err)
		}
		if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from " {
			t.Errorf("accumulated %s", msg.RawJSON())
		}
		e.wantCalls(t, 1, 1) // committed: nothing retried, nothing else called
	})

	t.Run("count_tokens from bedrock's CountTokens", func(t *testing.T) {
		e := newCCEnv(t)
		e.ant.then(jsonAnswer(503, anthropicErr("overloaded_error", "Overloaded")))
		n, err := e.client.Messages.CountTokens(testCtxSurf(t), anthropic.MessageCountTokensParams{Model: "claude-sonnet",
			Messages: messageParams("claude-sonnet").Messages})
		if err != nil || n.InputTokens != 4321 {
			t.Fatalf("%v %+v", err, n)
		}
		e.wantCalls(t, 1, 1)
		rq := e.bed.last(t)
		if rq.uri != "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens" {
			t.Errorf("CountTokens got %s", rq.uri)
		}
	})
}
