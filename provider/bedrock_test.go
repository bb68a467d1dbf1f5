package provider

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

func TestBedrockRequestGolden(t *testing.T) {
	const base = "https://bedrock-runtime.us-east-1.amazonaws.com"
	ep := &Endpoint{BaseURL: base, APIKey: "br-key", Region: "us-east-1"}
	testRequestGoldens(t, newBedrockAdapter(), "bedrock", ep, func(t *testing.T, g requestGolden, req *fasthttp.Request) {
		if g.Path == "" {
			t.Fatal("golden lacks path")
		}
		// What goes on the wire: the escaped path, not a normalized one.
		if got := string(req.URI().RequestURI()); got != g.Path {
			t.Errorf("request URI %s, want %s", got, g.Path)
		}
		if got := string(req.Host()); got != "bedrock-runtime.us-east-1.amazonaws.com" {
			t.Errorf("host %s", got)
		}
		if got := string(req.Header.Peek("Authorization")); got != "Bearer br-key" {
			t.Errorf("Authorization %q", got)
		}
		if req.Header.Peek("X-Amz-Date") != nil {
			t.Error("SigV4 headers with an API key")
		}
		wire := wireRequest(t, req)
		if !bytes.Contains(wire, []byte("POST "+g.Path+" HTTP/1.1\r\n")) {
			t.Errorf("request line on the wire: %q", wire[:bytes.IndexByte(wire, '\n')+1])
		}
	})
}

// wireRequest returns the bytes fasthttp sends for req.
func wireRequest(t *testing.T, req *fasthttp.Request) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := req.Write(w); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return buf.Bytes()
}

func TestBedrockResponseGolden(t *testing.T) {
	testResponseGoldens(t, newBedrockAdapter(), "bedrock", true)
}

func TestBedrockErrorGolden(t *testing.T) {
	testErrorGoldens(t, newBedrockAdapter(), "bedrock")
}

type eventGolden struct {
	Headers map[string]string `json:"headers"`
	Payload json.RawMessage   `json:"payload"`
}

// encodeEvents frames events with the SDK's event-stream encoder.
func encodeEvents(t testing.TB, events []json.RawMessage) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := eventstream.NewEncoder()
	for _, raw := range events {
		var e eventGolden
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		var m eventstream.Message
		for k, v := range e.Headers {
			m.Headers.Set(k, eventstream.StringValue(v))
		}
		m.Payload = e.Payload
		if err := enc.Encode(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestBedrockStreamGolden(t *testing.T) {
	for _, f := range goldenFiles(t, "bedrock", "stream_") {
		var g streamGolden
		loadGolden(t, f, &g)
		input := encodeEvents(t, g.Events)
		for _, size := range []int{4096, 16} {
			t.Run(filepath.Base(f)+"/buf"+strconv.Itoa(size), func(t *testing.T) {
				runStreamGolden(t, newBedrockAdapter(), g, input, size, true)
			})
		}
	}
}

// Frames arriving one byte at a time decode the same.
func TestBedrockStreamOneByteReads(t *testing.T) {
	var g streamGolden
	loadGolden(t, "testdata/bedrock/stream_tool_use.json", &g)
	input := encodeEvents(t, g.Events)
	dec := newBedrockAdapter().NewStream(&Call{Surface: router.SurfaceChat, Stream: true, Model: []byte("claude"), Body: []byte(`{}`)})
	r := bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(input)), 16)
	var out []byte
	var err error
	for calls := 0; err == nil; calls++ {
		if calls > 20 {
			t.Fatal("no end")
		}
		out, err = dec.Next(out, r)
	}
	if err != io.EOF || !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) ||
		!bytes.Contains(out, []byte(`"arguments":"\"WZPZ\"}"`)) {
		t.Fatalf("err %v, out %s", err, out)
	}
}

func TestBedrockStreamCorruptFrame(t *testing.T) {
	var g streamGolden
	loadGolden(t, "testdata/bedrock/stream_text.json", &g)
	input := encodeEvents(t, g.Events)
	input[len(input)-1] ^= 0xff // message CRC of the last frame
	dec := newBedrockAdapter().NewStream(&Call{Body: []byte(`{}`)})
	r := bufio.NewReader(bytes.NewReader(input))
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = dec.Next(nil, r)
	}
	var se *StreamError
	if !errors.As(err, &se) || se.Class != ClassTransport {
		t.Fatalf("corrupt frame: %v", err)
	}
}

// The SigV4 Authorization header is recomputed independently: the request
// is parsed back from the bytes fasthttp puts on the wire, reduced to the
// headers it claims to sign, and signed with the AWS SDK signer at the same
// time with the same credentials, as the service would verify it.
func TestBedrockSigV4(t *testing.T) {
	signAt := time.Date(2026, 1, 30, 12, 34, 56, 0, time.UTC)
	a := bedrockAdapter{now: func() time.Time { return signAt }}
	for _, tc := range []struct {
		name, base, model, token string
		stream                   bool
	}{
		{"converse", "https://bedrock-runtime.us-east-1.amazonaws.com", "anthropic.claude-3-5-sonnet-20240620-v1:0", "", false},
		{"stream+session", "https://bedrock-runtime.us-east-1.amazonaws.com", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0", "FwoGZXIvYXdzEJr//////////wEaDOq", true},
		{"port", "http://127.0.0.1:8443", "amazon.nova-lite-v1:0", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := &Endpoint{BaseURL: tc.base, Region: "us-east-1", AWSAccessKeyID: "AKIDEXAMPLE",
				AWSSecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", AWSSessionToken: tc.token}
			c := &Call{Surface: router.SurfaceChat, Stream: tc.stream,
				Body: []byte(`{"model":"x","messages":[{"role":"user","content":"Hello, Bedrock ✓"}],"max_tokens":9}`)}
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			if err := a.BuildRequest(req, ep, c, []byte(tc.model)); err != nil {
				t.Fatal(err)
			}
			got := string(req.Header.Peek("Authorization"))
			if !strings.HasPrefix(got, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260130/us-east-1/bedrock/aws4_request, SignedHeaders=") {
				t.Fatalf("Authorization %q", got)
			}
			if string(req.Header.Peek("X-Amz-Date")) != "20260130T123456Z" {
				t.Errorf("X-Amz-Date %q", req.Header.Peek("X-Amz-Date"))
			}
			if string(req.Header.Peek("X-Amz-Security-Token")) != tc.token {
				t.Errorf("X-Amz-Security-Token %q, want %q", req.Header.Peek("X-Amz-Security-Token"), tc.token)
			}

			hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(wireRequest(t, req))))
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(hr.Body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(body, req.Body()) {
				t.Fatal("wire body differs")
			}
			signed := got[strings.Index(got, "SignedHeaders=")+len("SignedHeaders="):]
			signed = signed[:strings.IndexByte(signed, ',')]
			for _, must := range []string{"content-type", "host", "x-amz-date"} {
				if !strings.Contains(";"+signed+";", ";"+must+";") {
					t.Errorf("%s not signed: %s", must, signed)
				}
			}
			if tc.token != "" && !strings.Contains(signed, "x-amz-security-token") {
				t.Errorf("session token not signed: %s", signed)
			}
			keep := http.Header{}
			for _, h := range strings.Split(signed, ";") {
				if v := hr.Header.Values(h); len(v) > 0 && h != "x-amz-date" && h != "x-amz-security-token" {
					keep[http.CanonicalHeaderKey(h)] = v
				}
			}
			check, _ := http.NewRequest(hr.Method, "http://placeholder/", nil)
			check.URL.Scheme = "https"
			check.URL.Host = hr.Host
			check.URL.Path, check.URL.RawPath = hr.URL.Path, hr.URL.RawPath
			check.Host = hr.Host
			check.Header = keep
			check.ContentLength = hr.ContentLength
			if !strings.Contains(signed, "content-length") {
				check.ContentLength = 0
			}
			sum := sha256.Sum256(body)
			creds := aws.Credentials{AccessKeyID: ep.AWSAccessKeyID, SecretAccessKey: ep.AWSSecretAccessKey, SessionToken: tc.token}
			if err := v4.NewSigner().SignHTTP(context.Background(), creds, check, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", signAt); err != nil {
				t.Fatal(err)
			}
			if want := check.Header.Get("Authorization"); got != want {
				t.Errorf("Authorization\ngot:  %s\nwant: %s", got, want)
			}
		})
	}
}

func TestBedrockNoCredentials(t *testing.T) {
	req := buildHi(t, newBedrockAdapter(), &Endpoint{BaseURL: "http://127.0.0.1:1"})
	if req.Header.Peek("Authorization") != nil {
		t.Errorf("Authorization sent without credentials: %q", req.Header.Peek("Authorization"))
	}
}

func TestBedrockRejectsRemoteImages(t *testing.T) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/tiff;base64,AAAA"}}]}]}`,
	} {
		err := newBedrockAdapter().BuildRequest(req, &Endpoint{}, &Call{Surface: router.SurfaceChat, Body: []byte(body)}, []byte("m"))
		var re *RequestError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestBedrockRegionFromHost(t *testing.T) {
	for host, want := range map[string]string{
		"bedrock-runtime.eu-west-3.amazonaws.com":      "eu-west-3",
		"bedrock-runtime-fips.us-east-1.amazonaws.com": "us-east-1",
		"bedrock-runtime.us-gov-west-1.amazonaws.com":  "us-gov-west-1",
		"127.0.0.1:8080":   "",
		"bedrock-runtime.": "",
		"example.com":      "",
	} {
		if got := regionFromHost(host); got != want {
			t.Errorf("%s: %q, want %q", host, got, want)
		}
	}
	// Signed with the host's region when Endpoint.Region is empty.
	ep := &Endpoint{BaseURL: "https://bedrock-runtime.ap-south-1.amazonaws.com", AWSAccessKeyID: "AKID", AWSSecretAccessKey: "s"}
	req := buildHi(t, newBedrockAdapter(), ep)
	if auth := string(req.Header.Peek("Authorization")); !strings.Contains(auth, "/ap-south-1/bedrock/aws4_request") {
		t.Errorf("Authorization %q", auth)
	}
}

// As for Anthropic, messageStart's role chunk waits for the first frame
// with content: an exception or error message before any content (an
// empty text delta and contentBlockStop carry none) comes back from the
// first Next with no frame, leaving dst's earlier bytes alone.
func TestBedrockStreamHoldsRoleUntilContent(t *testing.T) {
	const (
		start = `{"headers":{":message-type":"event",":event-type":"messageStart"},"payload":{"role":"assistant"}}`
		empty = `{"headers":{":message-type":"event",":event-type":"contentBlockDelta"},"payload":{"contentBlockIndex":0,"delta":{"text":""}}}`
		text  = `{"headers":{":message-type":"event",":event-type":"contentBlockDelta"},"payload":{"contentBlockIndex":0,"delta":{"text":"Hi"}}}`
		bstop = `{"headers":{":message-type":"event",":event-type":"contentBlockStop"},"payload":{"contentBlockIndex":0}}`
		stop  = `{"headers":{":message-type":"event",":event-type":"messageStop"},"payload":{"stopReason":"end_turn"}}`
		exc   = `{"headers":{":message-type":"exception",":exception-type":"serviceUnavailableException"},"payload":{"message":"busy"}}`
		errm  = `{"headers":{":message-type":"error",":error-code":"throttlingException",":error-message":"slow down"},"payload":{}}`
	)
	for _, tc := range []struct {
		name   string
		events []string
		class  Class // for an error: its class from the first Next
		status int
		with   string // else: what follows the role chunk in the first frame
	}{
		{"exception after start", []string{start, exc}, ClassServer, 503, ""},
		{"exception after empty delta", []string{start, empty, bstop, exc}, ClassServer, 503, ""},
		{"error message after start", []string{start, errm}, ClassRateLimited, 429, ""},
		{"truncated after start", []string{start}, ClassTransport, 0, ""},
		{"text", []string{start, empty, text}, 0, 0, `"content":"Hi"`},
		{"stop", []string{start, stop}, 0, 0, `"finish_reason":"stop"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := make([]json.RawMessage, len(tc.events))
			for i, e := range tc.events {
				raw[i] = json.RawMessage(e)
			}
			dec := newBedrockAdapter().NewStream(&Call{Surface: router.SurfaceChat, Stream: true, Model: []byte("claude"), Body: []byte(`{}`)})
			checkHeldRole(t, dec, bufio.NewReader(bytes.NewReader(encodeEvents(t, raw))), tc.class, tc.status, tc.with, false)
		})
	}
}
