package hotpath

import (
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

func TestHostAllowed(t *testing.T) {
	st := &State{allowedHosts: []string{"gw.internal", "[fd00::1]"}}
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost:8080": true, "127.0.0.1": true, "127.255.0.9:1": true, "[::1]": true, "[::1]:80": true,
		"gw.internal": true, "GW.INTERNAL:9": true, "[fd00::1]:1": true,
		"": false, ":80": false, "localhost.": false, "localhost.evil": false, "evil.localhost": false,
		"127.0.0.1.evil": false, "127.0.0.256": false, "127.0.0": false, "127.0.0.01.1": false, "0127.0.0.1": false,
		"128.0.0.1": false, "[::2]": false, "::1": false, "[::1]x": false, "[::1": false, "localhost:8o": false,
		"gw.internal.evil": false, "evil.gw.internal": false,
	} {
		if got := hostAllowed([]byte(host), st); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	if hostAllowed([]byte("gw.internal"), nil) {
		t.Error("no State: only loopback names")
	}
}

func TestHeaderField(t *testing.T) {
	raw := []byte("Host: x\r\nX-Gateway-Metadata:\r\nx-gateway-metadata:  {\"a\":1} \t\r\nX-Gateway-Metadatax: 1\r\nX-Gateway-Metadat: 2\r\n\r\n")
	v, n := headerField(raw, headerMetadataLower)
	if string(v) != "" || n != 2 {
		t.Fatalf("first %q, n %d; want \"\", 2", v, n)
	}
	v, n = headerField([]byte("A: 1\nX-GATEWAY-METADATA: {}\n\n"), headerMetadataLower) // bare LF ends lines too
	if string(v) != "{}" || n != 1 {
		t.Fatalf("bare LF: %q, %d", v, n)
	}
}

// A refused request gets one Finished record, not routed, on its path's
// surface; on the in-memory listener (not loopback) the Host is not checked.
func TestScreenRefusalIsRecorded(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	rec := newRecorder()
	tg.g.Finished = rec.finished
	r := tg.do("POST", "/v1/embeddings", `{"model":"gpt-4o","input":"x"}`, "Origin", "https://evil.example", "X-Request-Id", "o-1")
	if r.Status != 403 || !strings.Contains(r.Body, `"code":"origin_not_allowed"`) {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
	want := record{RequestID: "o-1", Surface: router.SurfaceEmbeddings, Rule: telemetry.RuleNotRouted, Status: 403, Class: upstream.ClassClient}
	if got := rec.next(t); !recordsEqual(got, want) {
		t.Errorf("record\n got %+v\nwant %+v", got, want)
	}
	if r := tg.do("GET", "/healthz", "", "Host", "rebind.evil.example"); r.Status != 200 {
		t.Errorf("in-memory listener, foreign Host: %d", r.Status)
	}
	noCalls(t, a, b, c)
}

// Trailer fields are refused whether the server streams the body (the
// default) or reads it before the handler (reduce_memory_usage), and the
// metadata is read from the header section in both.
func TestTrailerRefusedInBothBodyModes(t *testing.T) {
	a, b, c := threeMocks(t)
	body := `{"model":"gpt-4o","messages":[]}`
	for _, reduce := range []bool{false, true} {
		cfg := baseConfig
		if reduce {
			cfg = strings.Replace(baseConfig, "server:\n", "server:\n  reduce_memory_usage: true\n", 1)
		}
		tg := startGateway(t, cfg, a, b, c)
		resp := rawExchange(t, tg, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
			"Transfer-Encoding: chunked\r\n\r\n"+strconv.FormatInt(int64(len(body)), 16)+"\r\n"+body+"\r\n0\r\nX-Gateway-Metadata: {}\r\n\r\n")
		if resp.StatusCode() != 400 || !strings.Contains(string(resp.Body()), "trailer fields are not accepted") || !resp.ConnectionClose() {
			t.Errorf("reduce_memory_usage %v: %d close=%v %s", reduce, resp.StatusCode(), resp.ConnectionClose(), resp.Body())
		}
	}
	noCalls(t, a, b, c)
}
