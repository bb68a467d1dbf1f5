package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/switchyard/switchyard/config"
)

// Claude Code on Bedrock (docs/providers.md): the anthropic SDK's own
// bedrock option is the oracle of what InvokeModel must receive for a
// Messages request, and the plain anthropic SDK, pointed at the gateway, the
// client that must read the answer as if Anthropic had sent it.

const bedrockClaudeID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// bedrockInvokeMessage is the answer the mock gives: thinking, text and a
// tool call, with cache usage.
const bedrockInvokeMessage = `{"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
	`"content":[{"type":"thinking","thinking":"Weather needs a tool.","signature":"c2lnbmF0dXJl"},` +
	`{"type":"text","text":"Let me check."},` +
	`{"type":"tool_use","id":"toolu_bdrk_1","name":"get_weather","input":{"city":"Paris"}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,` +
	`"usage":{"input_tokens":21,"cache_creation_input_tokens":1500,"cache_read_input_tokens":30000,"output_tokens":64}}`

// bedrockInvokeEvents stream the same message.
var bedrockInvokeEvents = []string{
	`{"type":"message_start","message":{"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":21,"cache_creation_input_tokens":1500,"cache_read_input_tokens":30000,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Weather needs "}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a tool."}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2lnbmF0dXJl"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me "}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"check."}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_bdrk_1","name":"get_weather","input":{}}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
	`{"type":"content_block_stop","index":2}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":64}}`,
	`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":21,"outputTokenCount":64,"invocationLatency":812,"firstByteLatency":301}}`,
}

// writeInvokeFrames writes events as InvokeModelWithResponseStream does:
// event-stream chunk frames (the SDK's encoder, real CRCs), flushed one by
// one; then the exception frames given as type, message pairs.
func writeInvokeFrames(w http.ResponseWriter, events []string, exception ...string) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	enc := eventstream.NewEncoder()
	for _, e := range events {
		payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(e)), "p": "abcdefgh"})
		var m eventstream.Message
		m.Headers.Set(":event-type", eventstream.StringValue("chunk"))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Payload = payload
		enc.Encode(w, m) //nolint:errcheck
		w.(http.Flusher).Flush()
	}
	for i := 0; i+1 < len(exception); i += 2 {
		var m eventstream.Message
		m.Headers.Set(":exception-type", eventstream.StringValue(exception[i]))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Headers.Set(":message-type", eventstream.StringValue("exception"))
		m.Payload, _ = json.Marshal(map[string]string{"message": exception[i+1]})
		enc.Encode(w, m) //nolint:errcheck
		w.(http.Flusher).Flush()
	}
}

// bedrockInvokeOK answers InvokeModel, its stream and CountTokens.
func bedrockInvokeOK(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/invoke"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, bedrockInvokeMessage) //nolint:errcheck
	case strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream"):
		writeInvokeFrames(w, bedrockInvokeEvents)
	case strings.HasSuffix(r.URL.Path, "/count-tokens"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"inputTokens":31521}`) //nolint:errcheck
	default:
		w.Header().Set("x-amzn-ErrorType", "UnknownOperationException")
		http.Error(w, `{"message":"no such operation"}`, 404)
	}
}

// oracleParams is a Messages request with what Claude Code sends: a cached
// system prompt, a tool (cached too), thinking, an image and a tool turn.
func oracleParams(model string) anthropic.MessageNewParams {
	cached := anthropic.NewCacheControlEphemeralParam()
	tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]string{"type": "string"}}, Required: []string{"city"}}, "get_weather")
	tool.OfTool.CacheControl = cached
	tool.OfTool.Description = anthropic.String("Current weather in a city")
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 4096,
		System:    []anthropic.TextBlockParam{{Text: "You are a coding agent.", CacheControl: cached}},
		Thinking:  anthropic.ThinkingConfigParamOfEnabled(2048),
		Tools:     []anthropic.ToolUnionParam{tool},
		Metadata:  anthropic.MetadataParam{UserID: anthropic.String("user_abc")},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("What is in this picture, and the weather in Paris?"),
				anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_1", map[string]string{"city": "Paris"}, "get_weather")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "18°C, clear", false)),
		},
	}
}

// signedShape is what a SigV4 Authorization header says besides its
// signature: algorithm, credential scope and signed headers.
type signedShape struct {
	algorithm, credential string
	signed                []string
}

func shapeOf(t *testing.T, auth string) signedShape {
	t.Helper()
	alg, rest, _ := strings.Cut(auth, " ")
	var s signedShape
	s.algorithm = alg
	for _, part := range strings.Split(rest, ", ") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "Credential":
			s.credential = v
		case "SignedHeaders":
			s.signed = strings.Split(v, ";")
		case "Signature":
			if len(v) != 64 {
				t.Errorf("signature %q", v)
			}
		}
	}
	return s
}

// The official SDK's bedrock option and the gateway send InvokeModel the
// same request for the same Messages request, stream or not: the same
// operation on the same model, the same body member by member, SigV4 over
// the same scope; the gateway drops the client's first-party beta flags
// the SDK would have passed on.
func TestSDKOracleBedrockMessages(t *testing.T) {
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "") // the SDK would prefer it to SigV4
	m := newProviderMock(t)
	m.set(bedrockInvokeOK)
	creds := aws.Credentials{AccessKeyID: "AKIDORACLE", SecretAccessKey: "oracle/secret+key", SessionToken: "oracle-session"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const betas = "interleaved-thinking-2025-05-14,context-1m-2025-08-07"
	sdk := anthropic.NewClient(
		bedrock.WithConfig(aws.Config{Region: "us-east-1", Credentials: aws.CredentialsProviderFunc(
			func(context.Context) (aws.Credentials, error) { return creds, nil })}),
		anthropicopt.WithBaseURL(m.srv.URL), anthropicopt.WithMaxRetries(0),
		// The version Bedrock documents; the SDK copies its header into the body.
		anthropicopt.WithHeader("anthropic-version", "bedrock-2023-05-31"),
		anthropicopt.WithHeader("anthropic-beta", betas))

	pool := NewPool()
	tg := cloudTarget(t, pool, config.Target{VirtualKey: "bedrock", Provider: config.ProviderBedrock, BaseURL: m.srv.URL,
		Region: "us-east-1", AWSAccessKeyID: creds.AccessKeyID, AWSSecretAccessKey: creds.SecretAccessKey, AWSSessionToken: creds.SessionToken,
		ModelMap: map[string]string{"claude-sonnet-4-5": bedrockClaudeID}})
	url := cloudGateway(t, []*Target{tg})
	// Claude Code's way: the plain SDK, its first-party flags as well.
	gw := anthropic.NewClient(anthropicopt.WithBaseURL(url), anthropicopt.WithAPIKey("client-key"), anthropicopt.WithMaxRetries(0),
		anthropicopt.WithHeaderAdd("anthropic-beta", "claude-code-20250219,"+betas),
		anthropicopt.WithHeaderAdd("anthropic-beta", "oauth-2025-04-20,fine-grained-tool-streaming-2025-05-14"))

	compare := func(what string) {
		t.Helper()
		sdkReq, sdkBody := m.reqs(-2)
		gwReq, gwBody := m.reqs(-1)
		if sdkReq.Method != "POST" || gwReq.Method != "POST" || sdkReq.URL.Path != gwReq.URL.Path {
			t.Errorf("%s: SDK %s %s, gateway %s %s", what, sdkReq.Method, sdkReq.URL.Path, gwReq.Method, gwReq.URL.Path)
		}
		sameJSON(t, what, sdkBody, gwBody)
		for _, r := range []*http.Request{sdkReq, gwReq} {
			if r.Header.Get("anthropic-version") != "" || r.Header.Get("anthropic-beta") != "" || r.Header.Get("X-Api-Key") != "" ||
				r.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
				t.Errorf("%s: headers %v", what, r.Header)
			}
		}
		s, g := shapeOf(t, sdkReq.Header.Get("Authorization")), shapeOf(t, gwReq.Header.Get("Authorization"))
		if s.algorithm != "AWS4-HMAC-SHA256" || g.algorithm != s.algorithm || g.credential != s.credential ||
			!strings.HasSuffix(g.credential, "/us-east-1/bedrock/aws4_request") {
			t.Errorf("%s: SDK %+v, gateway %+v", what, s, g)
		}
		for _, h := range []string{"content-type", "host", "x-amz-date", "x-amz-security-token"} {
			if !slices.Contains(s.signed, h) || !slices.Contains(g.signed, h) {
				t.Errorf("%s: %s not signed by both: SDK %v, gateway %v", what, h, s.signed, g.signed)
			}
		}
		for i, r := range []*http.Request{sdkReq, gwReq} {
			body := [][]byte{sdkBody, gwBody}[i]
			if ok, want := verifySigV4(r, body, creds, "us-east-1"); !ok {
				t.Errorf("%s: signature %d does not verify; want %s", what, i, want)
			}
		}
	}

	// Not streamed.
	sdkMsg, err := sdk.Messages.New(ctx, oracleParams(bedrockClaudeID))
	if err != nil {
		t.Fatal(err)
	}
	var httpResp *http.Response
	gwMsg, err := gw.Messages.New(ctx, oracleParams("claude-sonnet-4-5"), anthropicopt.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	compare("invoke")
	gwReq, gwBody := m.reqs(-1)
	if gwReq.URL.EscapedPath() != "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke" {
		t.Errorf("gateway path %s (escaped as the AWS SDKs escape it)", gwReq.URL.EscapedPath())
	}
	if !bytes.Contains(gwBody, []byte(`"anthropic_beta":["interleaved-thinking-2025-05-14","context-1m-2025-08-07"]`)) ||
		bytes.Contains(gwBody, []byte(`"model"`)) || bytes.Contains(gwBody, []byte(`"stream"`)) {
		t.Errorf("gateway body %s", gwBody)
	}
	sameJSON(t, "answer", []byte(sdkMsg.RawJSON()), []byte(gwMsg.RawJSON()))
	sameJSON(t, "answer as sent", []byte(bedrockInvokeMessage), []byte(gwMsg.RawJSON()))
	if httpResp.Header.Get(HeaderTarget) != "bedrock" || httpResp.Header.Get(HeaderModel) != bedrockClaudeID {
		t.Errorf("headers %v", httpResp.Header)
	}

	// Streamed: the request, then the message each client accumulates.
	accumulate := func(c anthropic.Client, model string) anthropic.Message {
		t.Helper()
		s := c.Messages.NewStreaming(ctx, oracleParams(model))
		var msg anthropic.Message
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	sdkAcc := accumulate(sdk, bedrockClaudeID)
	gwAcc := accumulate(gw, "claude-sonnet-4-5")
	compare("invoke-with-response-stream")
	if gwReq, _ := m.reqs(-1); !strings.HasSuffix(gwReq.URL.Path, "/invoke-with-response-stream") {
		t.Errorf("stream path %s", gwReq.URL.Path)
	}
	sameJSON(t, "accumulated", []byte(sdkAcc.RawJSON()), []byte(gwAcc.RawJSON()))
	// What the mock sent, as the accumulated message says it.
	want := anthropic.Message{}
	if err := want.UnmarshalJSON([]byte(bedrockInvokeMessage)); err != nil {
		t.Fatal(err)
	}
	if gwAcc.ID != want.ID || gwAcc.Model != want.Model || gwAcc.StopReason != want.StopReason || gwAcc.Usage.InputTokens != 21 ||
		gwAcc.Usage.CacheCreationInputTokens != 1500 || gwAcc.Usage.CacheReadInputTokens != 30000 || gwAcc.Usage.OutputTokens != 64 ||
		len(gwAcc.Content) != 3 {
		t.Fatalf("accumulated %s", gwAcc.RawJSON())
	}
	for i := range want.Content {
		var a, b any
		json.Unmarshal([]byte(want.Content[i].RawJSON()), &a)  //nolint:errcheck
		json.Unmarshal([]byte(gwAcc.Content[i].RawJSON()), &b) //nolint:errcheck
		if !reflect.DeepEqual(a, b) {
			t.Errorf("block %d: %s, sent %s", i, gwAcc.Content[i].RawJSON(), want.Content[i].RawJSON())
		}
	}
}

// reqs returns the i-th request the mock received, counting from the end
// when i < 0.
func (m *providerMock) reqs(i int) (*http.Request, []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < 0 {
		i += len(m.seen)
	}
	return m.seen[i], m.bods[i]
}

// count_tokens through Bedrock's CountTokens: the foundation model, the
// InvokeModel body in base64 (max_tokens added), the count as Anthropic
// gives it.
func TestBedrockCountTokensThroughGateway(t *testing.T) {
	m := newProviderMock(t)
	m.set(bedrockInvokeOK)
	pool := NewPool()
	tg := cloudTarget(t, pool, config.Target{VirtualKey: "bedrock", Provider: config.ProviderBedrock, BaseURL: m.srv.URL,
		Region: "eu-central-1", APIKey: "bedrock-key", ModelMap: map[string]string{"claude-sonnet-4-5": "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"}})
	url := cloudGateway(t, []*Target{tg})
	gw := anthropic.NewClient(anthropicopt.WithBaseURL(url), anthropicopt.WithAPIKey("client-key"), anthropicopt.WithMaxRetries(0),
		anthropicopt.WithHeader("anthropic-beta", "token-counting-2024-11-01,context-1m-2025-08-07"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := oracleParams("claude-sonnet-4-5")
	n, err := gw.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: p.Model, System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: p.System},
		Messages: p.Messages, Thinking: p.Thinking, Tools: []anthropic.MessageCountTokensToolUnionParam{{OfTool: p.Tools[0].OfTool}}})
	if err != nil {
		t.Fatal(err)
	}
	if n.InputTokens != 31521 {
		t.Errorf("input_tokens %d", n.InputTokens)
	}
	r, body := m.last()
	if r.URL.EscapedPath() != "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens" || r.Header.Get("Authorization") != "Bearer bedrock-key" {
		t.Errorf("request %s %v", r.URL.EscapedPath(), r.Header)
	}
	var ct struct {
		Input struct {
			InvokeModel struct {
				Body []byte `json:"body"` // base64 in JSON
			} `json:"invokeModel"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &ct); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	var inner map[string]any
	if err := json.Unmarshal(ct.Input.InvokeModel.Body, &inner); err != nil {
		t.Fatalf("inner body %s: %v", ct.Input.InvokeModel.Body, err)
	}
	if inner["anthropic_version"] != "bedrock-2023-05-31" || inner["max_tokens"] != float64(1) || inner["model"] != nil ||
		!reflect.DeepEqual(inner["anthropic_beta"], []any{"context-1m-2025-08-07"}) || inner["tools"] == nil || inner["thinking"] == nil {
		t.Errorf("inner body %s", ct.Input.InvokeModel.Body)
	}
}
