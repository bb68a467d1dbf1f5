package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// scrapeMetrics returns the gateway's switchyard_* samples as
// series -> value, checking that each family has HELP and TYPE lines.
func (e *env) scrapeMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := e.http.Get(e.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	typed := map[string]bool{}
	helped := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		ln := sc.Text()
		if f := strings.Fields(ln); len(f) >= 4 && f[0] == "#" {
			switch f[1] {
			case "TYPE":
				typed[f[2]] = true
			case "HELP":
				helped[f[2]] = true
			}
			continue
		}
		if !strings.HasPrefix(ln, "switchyard_") {
			continue
		}
		sp := strings.LastIndexByte(ln, ' ')
		v, err := strconv.ParseFloat(ln[sp+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q", ln)
		}
		name := ln[:sp]
		if fam, _, _ := strings.Cut(name, "{"); !typed[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(fam, "_bucket"), "_sum"), "_count")] && !typed[fam] {
			t.Fatalf("no # TYPE before %q", ln)
		} else if !helped[fam] && !helped[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(fam, "_bucket"), "_sum"), "_count")] {
			t.Fatalf("no # HELP before %q", ln)
		}
		out[name] = v
	}
	return out
}

func tokens(target, kind string) string {
	return `switchyard_tokens_total{target="` + target + `",key="",kind="` + kind + `"}`
}

// accessLines counts the access-log lines written so far.
func (e *env) accessLines() int { return strings.Count(e.logs.String(), `"message":"request"`) }

// lastAccessLine returns the last access-log line (message "request").
func (e *env) lastAccessLine(t *testing.T) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(e.logs.String()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var m map[string]any
		if json.Unmarshal([]byte(lines[i]), &m) == nil && m["message"] == "request" {
			return m
		}
	}
	t.Fatal("no access line")
	return nil
}

// Token counters move by exactly the usage each mock reports, for every
// provider, streams included; an answer without usage moves nothing.
func TestTokenCountersFollowUpstreamUsage(t *testing.T) {
	e := newEnv(t)
	oaPrompt, oaCompletion := e.openai.m.UsageFigures()
	withUsage := func(p openai.ChatCompletionNewParams) openai.ChatCompletionNewParams {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		return p
	}
	type step struct {
		name               string
		run                func(t *testing.T)
		target             string
		prompt, completion float64 // -1: no counter movement expected
	}
	chat := func(model string, stream bool, p func(openai.ChatCompletionNewParams) openai.ChatCompletionNewParams) func(t *testing.T) {
		return func(t *testing.T) {
			params := chatParams(model)
			if p != nil {
				params = p(params)
			}
			if r := e.chat(t, params, stream); r.err != nil {
				t.Fatal(r.err)
			}
		}
	}
	steps := []step{
		{"openai", chat("gpt-4o", false, nil), "openai", float64(oaPrompt), float64(oaCompletion)},
		{"openai stream with usage chunk", chat("gpt-4o", true, withUsage), "openai", float64(oaPrompt), float64(oaCompletion)},
		{"openai stream without usage chunk", chat("gpt-4o", true, nil), "openai", -1, -1},
		{"anthropic", chat(claudeModel, false, nil), "anthropic", 5, 4},
		{"anthropic stream", chat(claudeModel, true, nil), "anthropic", 5, 4}, // no include_usage: counted all the same
		{"embeddings", func(t *testing.T) {
			if _, err := e.client.Embeddings.New(testCtx(t), openai.EmbeddingNewParams{
				Model: "gpt-4o", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")},
			}); err != nil {
				t.Fatal(err)
			}
		}, "openai", float64(oaPrompt), -1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			before, lines := e.scrapeMetrics(t), e.accessLines()
			s.run(t)
			// A stream's record (metrics and access line together) lands
			// when its writer ends, just after the client read [DONE].
			waitFor(t, 5*time.Second, "the access line", func() bool { return e.accessLines() > lines })
			after := e.scrapeMetrics(t)
			// No mock reports cache tokens: input (uncached) is the prompt.
			for kind, want := range map[string]float64{"input": s.prompt, "output": s.completion} {
				d := after[tokens(s.target, kind)] - before[tokens(s.target, kind)]
				if want < 0 {
					want = 0
				}
				if d != want {
					t.Errorf("%s %s tokens moved by %v, want %v", s.target, kind, d, want)
				}
			}
			line := e.lastAccessLine(t)
			for field, want := range map[string]float64{"prompt_tokens": s.prompt, "completion_tokens": s.completion} {
				got, ok := line[field]
				switch {
				case want < 0 && ok:
					t.Errorf("access line has %s=%v without usage", field, got)
				case want >= 0 && got != want:
					t.Errorf("access line %s=%v, want %v", field, got, want)
				}
			}
		})
	}

	// Bedrock, when anthropic fails over to it.
	e.anth.failWith(&anthropicFailure{status: 529, typ: "overloaded_error", msg: "Overloaded"})
	for _, stream := range []bool{false, true} {
		before := e.scrapeMetrics(t)
		if r := e.chat(t, chatParams(claudeModel), stream); r.err != nil {
			t.Fatal(r.err)
		}
		waitFor(t, 5*time.Second, "bedrock tokens", func() bool {
			a := e.scrapeMetrics(t)
			return a[tokens("bedrock", "input")]-before[tokens("bedrock", "input")] == 3 &&
				a[tokens("bedrock", "output")]-before[tokens("bedrock", "output")] == 3
		})
	}
	m := e.scrapeMetrics(t)
	if m[`switchyard_key_requests_total{key="",status="200"}`] != 8 {
		t.Errorf("requests by key: %v", m[`switchyard_key_requests_total{key="",status="200"}`])
	}
}

// The client's W3C trace context reaches the upstream unchanged and the
// trace id is logged; a malformed traceparent crosses not at all.
func TestTraceContextCrosses(t *testing.T) {
	e := newEnv(t)
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const state = "congo=t61rcWkgMzE"
	for _, stream := range []bool{false, true} {
		if r := e.chat(t, chatParams("gpt-4o"), stream, option.WithHeader("traceparent", parent),
			option.WithHeader("tracestate", state)); r.err != nil {
			t.Fatal(r.err)
		}
		got := e.openai.last(t).header
		if got.Get("traceparent") != parent || got.Get("tracestate") != state {
			t.Fatalf("upstream got traceparent %q tracestate %q", got.Get("traceparent"), got.Get("tracestate"))
		}
		waitFor(t, 5*time.Second, "the access line", func() bool {
			return e.lastAccessLine(t)["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
		})
	}
	// Anthropic gets it too.
	if r := e.chat(t, chatParams(claudeModel), false, option.WithHeader("traceparent", parent)); r.err != nil {
		t.Fatal(r.err)
	}
	if got := e.anth.last(t).header.Get("traceparent"); got != parent {
		t.Fatalf("anthropic got traceparent %q", got)
	}

	req, _ := http.NewRequest("POST", e.base+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01")
	req.Header.Set("tracestate", state)
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := e.openai.last(t).header
	if got.Get("traceparent") != "" || got.Get("tracestate") != "" {
		t.Fatalf("malformed trace context forwarded: %q %q", got.Get("traceparent"), got.Get("tracestate"))
	}
	if _, ok := e.lastAccessLine(t)["trace_id"]; ok {
		t.Fatal("trace_id logged for a malformed traceparent")
	}

	// A request refused before routing is logged with its trace id too.
	req, _ = http.NewRequest("POST", e.base+"/v1/nowhere", strings.NewReader(`{}`))
	req.Header.Set("traceparent", parent)
	resp, err = e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	if line := e.lastAccessLine(t); resp.StatusCode != 404 || line["trace_id"] != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("status %d, access line %v", resp.StatusCode, line)
	}
}

// The pass-through surfaces count their upstream's usage too: the mocks
// report 5 input and 3 output tokens on every answer and stream.
func TestPassThroughTokenCounters(t *testing.T) {
	e := newSurfEnv(t)
	ctx := testCtxSurf(t)
	if _, err := e.oai.Responses.New(ctx, responseParams("gpt-4.1")); err != nil {
		t.Fatal(err)
	}
	p := responseParams("gpt-4.1")
	p.User = openai.String("vip")
	s := e.oai.Responses.NewStreaming(ctx, p)
	for s.Next() {
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if _, err := e.ant.Messages.New(ctx, messageParams("claude-sonnet-4-5")); err != nil {
		t.Fatal(err)
	}
	mp := messageParams("claude-sonnet-4-5")
	mp.Metadata = anthropic.MetadataParam{UserID: anthropic.String("vip")}
	ms := e.ant.Messages.NewStreaming(ctx, mp)
	for ms.Next() {
	}
	if err := ms.Err(); err != nil {
		t.Fatal(err)
	}
	_ = ms.Close()
	env := &env{base: e.base, http: &http.Client{Timeout: 5 * time.Second}}
	var m map[string]float64
	waitFor(t, 5*time.Second, "the token counters", func() bool {
		m = env.scrapeMetrics(t)
		for _, target := range []string{"oa1", "oa2", "ant1", "ant2"} {
			if m[tokens(target, "input")] != 5 || m[tokens(target, "output")] != 3 {
				return false
			}
		}
		return true
	})
}
