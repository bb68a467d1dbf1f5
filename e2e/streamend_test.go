package e2e

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// rawStreamUpstream answers every request with a 200 chunked stream of
// the events in head, then fails as its mode says. It speaks raw TCP, so
// it can cut or reset its connection mid-stream.
type rawStreamUpstream struct {
	ln   net.Listener
	head atomic.Pointer[[]byte]
	ct   atomic.Pointer[string]
	mode atomic.Pointer[string] // timeout | cut | reset | oversized
	// bedrock: binary frames, so no SSE comments while it stalls and an
	// oversized frame is a prelude declaring one.
	bedrock bool
}

func startRawStreamUpstream(t *testing.T, bedrock bool) *rawStreamUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawStreamUpstream{ln: ln, bedrock: bedrock}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	return u
}

func (u *rawStreamUpstream) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, req.Body)
	chunk := func(b []byte) error {
		_, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(b), b)
		return err
	}
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n", *u.ct.Load())
	if chunk(*u.head.Load()) != nil {
		return
	}
	switch *u.mode.Load() {
	case "timeout":
		// Alive but saying nothing: SSE comments every 100 ms (Bedrock's
		// frames have none: silence), until the gateway hangs up.
		for i := 0; i < 100; i++ {
			time.Sleep(100 * time.Millisecond)
			if u.bedrock {
				_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
				if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
					return
				}
				continue
			}
			if chunk([]byte(": keep-alive\n\n")) != nil {
				return
			}
		}
	case "cut":
		return // FIN without the chunked terminator
	case "reset":
		_ = c.(*net.TCPConn).SetLinger(0)
		return
	case "oversized":
		if u.bedrock {
			var p [12]byte
			binary.BigEndian.PutUint32(p[0:], 9<<20)
			binary.BigEndian.PutUint32(p[4:], 0)
			binary.BigEndian.PutUint32(p[8:], crc32.ChecksumIEEE(p[:8]))
			if chunk(p[:]) != nil {
				return
			}
		} else if chunk([]byte("data: ")) != nil {
			return
		}
		a := bytes.Repeat([]byte("a"), 64<<10)
		for i := 0; i < 9<<4; i++ { // 9 MiB, no blank line
			if chunk(a) != nil {
				return
			}
		}
		time.Sleep(5 * time.Second)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// bedrockFrames encodes Converse stream events (type, JSON payload pairs).
func bedrockFrames(t *testing.T, ev ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := eventstream.NewEncoder()
	for i := 0; i+1 < len(ev); i += 2 {
		var msg eventstream.Message
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue(ev[i]))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Payload = []byte(ev[i+1])
		if err := enc.Encode(&b, msg); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

const anthropicHead = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"

// TestCommittedStreamFailuresEndWell: after a stream is committed, each
// failure (the target timeout while the upstream sends only SSE comments,
// an upstream cut, an upstream reset, an oversized event) ends the answer
// with a well-formed chunked end, the API's own error event last (OpenAI
// `data: {"error":…}`, Responses and Messages `event: error`), nothing
// after it and no [DONE], on every surface and provider.
func TestCommittedStreamFailuresEndWell(t *testing.T) {
	type surf struct{ path, body, errPrefix string }
	chat := surf{"/v1/chat/completions", chatBody("m", true), `data: {"error":`}
	completions := surf{"/v1/completions", `{"model":"m","prompt":"hi","stream":true}`, `data: {"error":`}
	responses := surf{"/v1/responses", `{"model":"m","input":"hi","stream":true}`, "event: error\ndata: {\"type\":\"error\""}
	messages := surf{"/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "event: error\ndata: {\"type\":\"error\""}
	type combo struct {
		provider, base, ct string
		head               func(t *testing.T, path string) []byte
		surfaces           []surf
	}
	openaiHead := func(t *testing.T, path string) []byte {
		switch path {
		case "/v1/completions":
			return []byte(`data: {"id":"c1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"hi","finish_reason":null}]}` + "\n\n")
		case "/v1/responses":
			return []byte("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"hi\"}\n\n")
		}
		return []byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n")
	}
	combos := []combo{
		{"openai", "/v1", "text/event-stream", openaiHead, []surf{chat, completions, responses}},
		{"anthropic", "", "text/event-stream", func(*testing.T, string) []byte { return []byte(anthropicHead) }, []surf{chat, messages}},
		{"bedrock", "", "application/vnd.amazon.eventstream", func(t *testing.T, _ string) []byte {
			return bedrockFrames(t, "messageStart", `{"role":"assistant"}`,
				"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"hi"}}`)
		}, []surf{chat}},
	}
	for _, cb := range combos {
		up := startRawStreamUpstream(t, cb.provider == "bedrock")
		up.ct.Store(&cb.ct)
		g := startRawGateway(t, cb.provider, "http://"+up.ln.Addr().String()+cb.base, "upstream-key", "1s",
			"    circuit_breaker: {failure_threshold: 1000}\n")
		for _, s := range cb.surfaces {
			head := cb.head(t, s.path)
			up.head.Store(&head)
			for _, mode := range []string{"timeout", "cut", "reset", "oversized"} {
				up.mode.Store(&mode)
				name := cb.provider + " " + s.path + " " + mode
				status, body, err := rawStream(t, g.addr, s.path, s.body)
				if status != 200 {
					t.Errorf("%s: status %d %q", name, status, body)
					continue
				}
				if err != nil {
					t.Errorf("%s: the chunked body does not end well: %v; got %q", name, err, body)
				}
				events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
				last := events[len(events)-1]
				if len(events) < 2 || !strings.HasPrefix(last, s.errPrefix) || !strings.HasSuffix(body, "\n\n") {
					t.Errorf("%s: the stream does not end with its error event %q:\n%q", name, s.errPrefix, body)
				}
				if strings.Contains(body, "[DONE]") {
					t.Errorf("%s: [DONE] after a failure:\n%q", name, body)
				}
			}
		}
	}
}

// rawStream posts body to path over a new connection and reads the
// streamed answer through Go's chunked reader: err is what it met before a
// clean end (the terminating chunk).
func rawStream(t *testing.T, addr, path, body string) (status int, out string, err error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
