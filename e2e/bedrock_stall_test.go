package e2e

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// invokeFrame is one InvokeModelWithResponseStream chunk frame carrying
// the Anthropic event ev.
func invokeFrame(t *testing.T, ev string) []byte {
	t.Helper()
	payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(ev))})
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("event"))
	m.Headers.Set(":event-type", eventstream.StringValue("chunk"))
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	m.Payload = payload
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// stallingBedrock answers every InvokeModel stream with the frames head,
// then the first half of one more frame, and then nothing, holding the
// connection open until the gateway closes it (closed is then signalled).
func stallingBedrock(t *testing.T, head []byte, half []byte) (base string, closed <-chan time.Time) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	done := make(chan time.Time, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.amazon.eventstream\r\nTransfer-Encoding: chunked\r\n\r\n")
		for _, p := range [][]byte{head, half} {
			fmt.Fprintf(c, "%x\r\n%s\r\n", len(p), p)
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		io.Copy(io.Discard, br) // until the gateway hangs up
		done <- time.Now()
	}()
	return "http://" + ln.Addr().String(), done
}

// TestBedrockStreamStallsMidFrame: a Bedrock stream that stops in the
// middle of a frame after its first events is cut (its silence is bounded
// by the target's timeout and a quarter, here 1.25 s, not by the 20 s the
// client waits): the client gets Anthropic's error event and no
// message_stop, and the upstream connection is closed.
func TestBedrockStreamStallsMidFrame(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}`
	block := `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	delta := invokeFrame(t, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"never whole"}}`)
	head := append(invokeFrame(t, start), invokeFrame(t, block)...)
	base, closed := stallingBedrock(t, head, delta[:len(delta)/2])
	g := startRawGateway(t, "bedrock", base, "bedrock-api-key-0123456789", "1s",
		"    region: us-east-1\n    model_map: {never-sent: us.anthropic.claude-sonnet-4-5-20250929-v1:0}\n")
	resp, body := g.rawPost(t, "/v1/messages", `{"model":"never-sent","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "event: content_block_start") {
		t.Fatalf("the stream did not commit: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(body, "event: error") || strings.Contains(body, "message_stop") {
		t.Fatalf("a stalled stream ended without Anthropic's error event:\n%s", body)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream connection stayed open after the stall")
	}
}
