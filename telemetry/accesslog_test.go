package telemetry

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// decodeLines decodes every line of buf as one JSON object.
func decodeLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ln := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if ln == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("line is not one JSON object: %v\n%s", err, ln)
		}
		out = append(out, m)
	}
	return out
}

func jsonLogger(t *testing.T, level string, buf *bytes.Buffer) zerolog.Logger {
	t.Helper()
	l, err := NewLogger(level, "json", buf)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestAccessLogFields(t *testing.T) {
	var buf bytes.Buffer
	a := NewAccessLog(jsonLogger(t, "info", &buf))
	a.Log(&Entry{
		RequestID: []byte("req-1"),
		Surface:   router.SurfaceChat,
		Model:     []byte("claude-3-5-sonnet"),
		Rule:      2,
		Walked:    []string{"anthropic", "bedrock"},
		Target:    "bedrock",
		Attempts:  3,
		Status:    200,
		Latency:   1234567 * time.Microsecond,
		TTFB:      250500 * time.Microsecond,
		Stream:    true,
		Class:     upstream.ClassOK,
		Key:       "acme-prod",
		Usage:     upstream.Usage{Prompt: 12, CacheRead: 7, CacheWrite: 2, Completion: 0, HasPrompt: true, HasCompletion: true},
		TraceID:   []byte("4bf92f3577b34da6a3ce929d0e0e4736"),
	})
	a.Log(&Entry{
		RequestID: []byte("req-2"),
		Surface:   router.SurfaceEmbeddings,
		Model:     []byte("text-embedding-3-small"),
		Rule:      -1,
		Walked:    []string{"openai"},
		Target:    "openai",
		Attempts:  1,
		Status:    502,
		Latency:   80 * time.Millisecond,
		TTFB:      70 * time.Millisecond, // not a stream: not logged
		Class:     upstream.ClassServer,
		Usage:     upstream.Usage{Prompt: 8, HasPrompt: true}, // embeddings: no completion count
	})
	a.Log(&Entry{Surface: router.SurfaceImages, Status: 404, Rule: 0})
	lines := decodeLines(t, &buf)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), buf.String())
	}
	for _, ln := range lines {
		if ln["level"] != "info" || ln["message"] != "request" || ln["time"] == nil {
			t.Errorf("line lacks level/message/time: %v", ln)
		}
		delete(ln, "level")
		delete(ln, "message")
		delete(ln, "time")
	}
	want := []map[string]any{{
		"request_id": "req-1", "surface": "chat", "model": "claude-3-5-sonnet", "rule": "2",
		"chain": []any{"anthropic", "bedrock"}, "target": "bedrock", "attempts": 3.0, "status": 200.0,
		"outcome": "ok", "stream": true, "latency_ms": 1234.567, "ttfb_ms": 250.5,
		"key": "acme-prod", "prompt_tokens": 12.0, "input_tokens": 3.0, "cache_read_tokens": 7.0, "cache_write_tokens": 2.0,
		"completion_tokens": 0.0,
		"trace_id":          "4bf92f3577b34da6a3ce929d0e0e4736",
	}, {
		"request_id": "req-2", "surface": "embeddings", "model": "text-embedding-3-small", "rule": "fallback",
		"chain": []any{"openai"}, "target": "openai", "attempts": 1.0, "status": 502.0,
		"outcome": "server", "stream": false, "latency_ms": 80.0, "prompt_tokens": 8.0,
		"input_tokens": 8.0, "cache_read_tokens": 0.0, "cache_write_tokens": 0.0,
	}, {
		"request_id": "", "surface": "images", "model": "", "rule": "0",
		"chain": []any{}, "target": "", "attempts": 0.0, "status": 404.0,
		"outcome": "ok", "stream": false, "latency_ms": 0.0,
	}}
	for i := range want {
		if !reflect.DeepEqual(lines[i], want[i]) {
			t.Errorf("line %d:\n got %v\nwant %v", i, lines[i], want[i])
		}
	}
}

func TestAccessLogModelIsTruncatedAndEscaped(t *testing.T) {
	var buf bytes.Buffer
	a := NewAccessLog(jsonLogger(t, "info", &buf))
	// 255 ASCII bytes then a 3-byte rune straddling the 256-byte limit.
	long := strings.Repeat("m", 255) + "€" + strings.Repeat("x", 5000)
	hostile := "gpt\"4\n{\"injected\":true}\\\x00\x1b[31m\xff"
	a.Log(&Entry{Model: []byte(long), RequestID: []byte(strings.Repeat("r", 1000))})
	a.Log(&Entry{Model: []byte(hostile), RequestID: []byte("id\"\n")})
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d newlines for 2 entries: a value broke the line\n%s", n, buf.String())
	}
	lines := decodeLines(t, &buf)
	m0 := lines[0]["model"].(string)
	if m0 != strings.Repeat("m", 255) {
		t.Errorf("long model logged as %d bytes %q..., want the 255 bytes before the split rune", len(m0), m0[:min(len(m0), 20)])
	}
	if lines[0]["model_truncated"] != true {
		t.Error("model_truncated not set for a cut model")
	}
	if rid := lines[0]["request_id"].(string); len(rid) != MaxRequestIDBytes {
		t.Errorf("request_id logged with %d bytes, want %d", len(rid), MaxRequestIDBytes)
	}
	m1 := lines[1]["model"].(string)
	if !strings.HasPrefix(m1, "gpt\"4\n{\"injected\":true}\\\x00\x1b[31m") || !utf8.ValidString(m1) {
		t.Errorf("hostile model did not round-trip as one string field: %q", m1)
	}
	if _, ok := lines[1]["injected"]; ok {
		t.Error("model text injected a field")
	}
	if _, ok := lines[1]["model_truncated"]; ok {
		t.Error("short model marked truncated")
	}
}

func TestTruncateUTF8(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"ab€", 3, "ab", true},                                // € is 3 bytes: do not split it
		{"a€b", 4, "a€", true},                                // cut right after the rune
		{"😀😀", 5, "😀", true},                                  // 4-byte rune
		{"\x80\x80\x80\x80\x80\x80\x80", 5, "\x80\x80", true}, // garbage: back off at most 3
	} {
		got, cut := truncateUTF8([]byte(c.in), c.n)
		if string(got) != c.want || cut != c.cut {
			t.Errorf("truncateUTF8(%q, %d) = %q, %v; want %q, %v", c.in, c.n, got, cut, c.want, c.cut)
		}
	}
}

func TestAccessLogLevels(t *testing.T) {
	// log.level warn silences diagnostics but not the access log.
	var buf bytes.Buffer
	l := jsonLogger(t, "warn", &buf)
	l.Info().Msg("diagnostic")
	NewAccessLog(l).Log(&Entry{Status: 200})
	lines := decodeLines(t, &buf)
	if len(lines) != 1 || lines[0]["message"] != "request" {
		t.Fatalf("want only the access line, got %v", lines)
	}

	// A disabled logger and a nil AccessLog write nothing and do not panic.
	buf.Reset()
	NewAccessLog(zerolog.New(&buf).Level(zerolog.Disabled)).Log(&Entry{Status: 200})
	NewAccessLog(zerolog.Nop()).Log(&Entry{Status: 200})
	var nilLog *AccessLog
	nilLog.Log(&Entry{Status: 200})
	NewAccessLog(jsonLogger(t, "info", &buf)).Log(nil)
	if buf.Len() != 0 {
		t.Fatalf("disabled access log wrote %q", buf.String())
	}
}

func TestAccessLogConsoleFormat(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewLogger("info", "console", &buf)
	if err != nil {
		t.Fatal(err)
	}
	NewAccessLog(l).Log(&Entry{RequestID: []byte("req-9"), Surface: router.SurfaceChat, Model: []byte("gpt-4o"),
		Rule: -1, Walked: []string{"openai"}, Target: "openai", Attempts: 1, Status: 200})
	out := buf.String()
	if json.Valid(bytes.TrimSpace(buf.Bytes())) {
		t.Fatalf("console format wrote JSON: %s", out)
	}
	for _, want := range []string{"INF", "request", "request_id=req-9", "model=gpt-4o", "rule=fallback", "status=200", "target=openai"} {
		if !strings.Contains(out, want) {
			t.Errorf("console line lacks %q: %s", want, out)
		}
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("console access log is not one line: %q", out)
	}
}

// A request refused before routing is logged as rule "none", not as the
// no-match "fallback" that a routed request without a matching rule gets.
func TestAccessLogRuleNotRoutedIsNone(t *testing.T) {
	var buf bytes.Buffer
	a := NewAccessLog(jsonLogger(t, "info", &buf))
	a.Log(&Entry{Surface: router.SurfaceChat, Status: 400, Rule: RuleNotRouted, Class: upstream.ClassClient})
	a.Log(&Entry{Surface: router.SurfaceChat, Status: 404, Rule: -1, Class: upstream.ClassClient})
	lines := decodeLines(t, &buf)
	if len(lines) != 2 || lines[0]["rule"] != "none" || lines[1]["rule"] != "fallback" {
		t.Fatalf("rules: %v", lines)
	}
}

// A request on no API surface is logged with surface "none"; any other
// out-of-range surface with "unknown".
func TestAccessLogSurfaceNone(t *testing.T) {
	var buf bytes.Buffer
	a := NewAccessLog(jsonLogger(t, "info", &buf))
	a.Log(&Entry{Surface: SurfaceNone, Status: 404, Rule: RuleNotRouted, Class: upstream.ClassClient})
	a.Log(&Entry{Surface: SurfaceNone + 1, Status: 404, Rule: RuleNotRouted, Class: upstream.ClassClient})
	a.Log(&Entry{Surface: router.SurfaceImages, Status: 200})
	lines := decodeLines(t, &buf)
	if len(lines) != 3 || lines[0]["surface"] != "none" || lines[1]["surface"] != "unknown" ||
		lines[2]["surface"] != "images" {
		t.Fatalf("surfaces: %v", lines)
	}
}

// TestAccessLogDroppedTools: the tools a translation dropped are named in
// the line (cut to MaxDroppedToolsBytes), and absent when none were.
func TestAccessLogDroppedTools(t *testing.T) {
	var buf bytes.Buffer
	a := NewAccessLog(jsonLogger(t, "info", &buf))
	a.Log(&Entry{Surface: router.SurfaceResponses, DroppedTools: []byte("web_search,image_generation")})
	a.Log(&Entry{Surface: router.SurfaceResponses, DroppedTools: bytes.Repeat([]byte("x"), 1000)})
	a.Log(&Entry{Surface: router.SurfaceResponses})
	lines := decodeLines(t, &buf)
	if got := lines[0]["dropped_tools"]; got != "web_search,image_generation" {
		t.Errorf("dropped_tools %v", got)
	}
	if got, _ := lines[1]["dropped_tools"].(string); len(got) != MaxDroppedToolsBytes {
		t.Errorf("long dropped_tools kept %d bytes", len(got))
	}
	if _, ok := lines[2]["dropped_tools"]; ok {
		t.Errorf("dropped_tools without any: %v", lines[2])
	}
}
