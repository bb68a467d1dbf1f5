package hotpath

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// TestRouteOfBatchPaths: the batch APIs' paths and their sub-paths are the
// batch route; look-alikes are not.
func TestRouteOfBatchPaths(t *testing.T) {
	for _, p := range []string{"/v1/files", "/v1/files/file-1", "/v1/files/file-1/content", "/v1/batches", "/v1/batches/b/cancel",
		"/v1/messages/batches", "/v1/messages/batches/m/results", "/v1/files/"} {
		if r := routeOf([]byte(p)); r != routeBatch {
			t.Errorf("routeOf(%q) = %d; want the batch route", p, r)
		}
	}
	for _, p := range []string{"/v1/filesx", "/v1/batchesx/1", "/v1/messages/batch", "/v1/file", "/files", "/v1/messages/batchesx"} {
		if r := routeOf([]byte(p)); r != routeUnknown {
			t.Errorf("routeOf(%q) = %d; want unknown", p, r)
		}
	}
	if r := routeOf([]byte("/v1/messages")); r != routeMessages {
		t.Errorf("/v1/messages is no longer the messages route")
	}
}

const lineYAML = `
strategy:
  mode: conditional
  conditions:
    - {key: user, value: vip, target_key: b}
    - {key: metadata, field: tier, value: gold, target_key: b}
    - {key: model, value: gpt-4o, target_keys: [a, b]}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1"}
  - {virtual_key: b, provider: openai, base_url: "http://127.0.0.1:2/v1"}
auth:
  keys:
    - {name: free, key: sy-free-0123456789abcdef}
    - {name: bound, key: sy-bound-0123456789abcdef, user: acme, metadata: {tier: std}}
    - {name: tight, key: sy-tight-0123456789abcdef, models: [gpt-4o-mini]}
`

func lineState(t *testing.T) *State {
	t.Helper()
	cfg, err := config.Parse("lines.yaml", []byte(lineYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Build(cfg, upstream.NewPool(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLineRouter: a request inside an upload routes as the request alone
// would for the key: its user and the upload's metadata header route,
// the key's bindings replace them, its allow-list refuses, and the model's
// literal is located in the body.
func TestLineRouter(t *testing.T) {
	st := lineState(t)
	caller := func(key, meta string) Caller {
		h := &head{}
		if meta != "" {
			h.meta, h.nMeta = []byte(meta), 1
		}
		k, _ := checkKey(st, &head{auth: []byte("Bearer " + key), nAuth: 1})
		return Caller{key: k, h: h}
	}
	for _, c := range []struct {
		name, key, meta, body string
		s                     router.Surface
		rule                  int
		status                int
	}{
		{"model rule", "sy-free-0123456789abcdef", "", `{"model":"gpt-4o"}`, router.SurfaceChat, 2, 0},
		{"user rule", "sy-free-0123456789abcdef", "", `{"model":"gpt-4o","user":"vip"}`, router.SurfaceChat, 0, 0},
		{"header metadata", "sy-free-0123456789abcdef", `{"tier":"gold"}`, `{"model":"gpt-4o"}`, router.SurfaceChat, 1, 0},
		{"metadata ignored on embeddings", "sy-free-0123456789abcdef", `{"tier":"gold"}`, `{"model":"gpt-4o","input":"x"}`, router.SurfaceEmbeddings, 2, 0},
		{"bound user wins", "sy-bound-0123456789abcdef", "", `{"model":"gpt-4o","user":"vip"}`, router.SurfaceChat, 2, 0},
		{"bound metadata wins", "sy-bound-0123456789abcdef", `{"tier":"gold"}`, `{"model":"gpt-4o"}`, router.SurfaceChat, 2, 0},
		{"allow-list", "sy-tight-0123456789abcdef", "", `{"model":"gpt-4o"}`, router.SurfaceChat, 0, 403},
		{"duplicate model", "sy-free-0123456789abcdef", "", `{"model":"gpt-4o","model":"x"}`, router.SurfaceChat, 0, 400},
		{"messages user", "sy-free-0123456789abcdef", "", `{"model":"gpt-4o","metadata":{"user_id":"vip"}}`, router.SurfaceMessages, 0, 0},
	} {
		lr, ref := caller(c.key, c.meta).LineRouter(st)
		if ref != nil {
			t.Fatalf("%s: %+v", c.name, ref)
		}
		line, ref := lr.Route(c.s, []byte(c.body))
		switch {
		case c.status != 0:
			if ref == nil || ref.Status != c.status {
				t.Errorf("%s: refusal %+v; want %d", c.name, ref, c.status)
			}
		case ref != nil:
			t.Errorf("%s: refused %+v", c.name, ref)
		case line.Rule != c.rule:
			t.Errorf("%s: rule %d; want %d", c.name, line.Rule, c.rule)
		case c.body[line.ModelAt:line.ModelEnd] != `"gpt-4o"`:
			t.Errorf("%s: model literal at [%d,%d) is %q", c.name, line.ModelAt, line.ModelEnd, c.body[line.ModelAt:line.ModelEnd])
		}
	}
	if _, ref := caller("sy-free-0123456789abcdef", `{"tier":`).LineRouter(st); ref == nil || ref.Status != 400 {
		t.Fatalf("a malformed metadata header: %+v", ref)
	}
	c := caller("sy-free-0123456789abcdef", `{}`)
	c.h.nMeta = 2
	if _, ref := c.LineRouter(st); ref == nil || !strings.Contains(ref.Message, "more than once") {
		t.Fatalf("a repeated metadata header: %+v", ref)
	}
}

func TestObjectMembers(t *testing.T) {
	var got []string
	err := ObjectMembers([]byte(` {"a" : 1, "b\u0063":{"x":[1,"]"]}, "d":"e\"f"} `), func(k string, v []byte) error {
		got = append(got, k+"="+string(v))
		return nil
	})
	if want := `a=1|bc={"x":[1,"]"]}|d="e\"f"`; err != nil || strings.Join(got, "|") != want {
		t.Fatalf("members %v, %v; want %s", got, err, want)
	}
	for _, bad := range []string{``, `[]`, `{"a":1}x`, `{"a":}`, `{"a":1,}`, `{"a":"x}`, `{"a":[}`, `{"\ud800":1}`, `{"a":tru}`,
		`{"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`} {
		if err := ObjectMembers([]byte(bad), func(string, []byte) error { return nil }); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if s, ok := JSONString([]byte(`"a\u0062"`)); !ok || s != "ab" {
		t.Fatalf("JSONString = %q, %v", s, ok)
	}
	for _, bad := range []string{`a`, `"a`, `"a"b"`, `1`, `"\x"`} {
		if _, ok := JSONString([]byte(bad)); ok {
			t.Errorf("JSONString(%s) accepted", bad)
		}
	}
}
