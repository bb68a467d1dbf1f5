package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/daemon"
)

// Client keys of these tests (docs/client-keys.md), issued against the worked example
// (rule 2: user vip → openai; rule 3: tier gold → eu):
//
//	acme   bound to user acme and tier standard: can claim neither
//	gold   bound to tier gold: EU-pinned without any header; any model
//	tight  nothing bound; may use gpt-4o-mini only
//
// acme is written as its digest, gold and tight as keys hashed at load.
const (
	acmeKey  = "sy-acme-key-0123456789abcdef0123456789"
	goldKey  = "sy-gold-key-0123456789abcdef0123456789"
	tightKey = "sy-tight-key-0123456789abcdef012345678"
)

func hexSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

var authBlock = `auth:
  keys:
    - name: acme
      sha256: ` + hexSHA256(acmeKey) + `
      user: acme
      metadata: {tier: standard}
    - name: gold
      key: ` + goldKey + `
      metadata: {tier: gold}
    - name: tight
      key: ` + tightKey + `
      models: [` + sharedModel + `]
`

// withKey is a client call presenting key as the OpenAI SDK does (Bearer).
func withKey(key string) option.RequestOption { return option.WithAPIKey(key) }

// post sends body to path with the given headers over net/http and returns
// the status, headers and body.
func (e *env) post(t *testing.T, path, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	method := http.MethodPost
	if body == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(testCtx(t), method, e.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestAuthOpenModeUnchanged(t *testing.T) {
	e := newEnv(t)
	// No auth block: no key needed, any key accepted, claims route.
	code, h, body := e.post(t, "/v1/chat/completions", `{"model":"`+sharedModel+`","user":"vip"}`)
	if code != 200 || h.Get("X-Gateway-Rule") != "2" {
		t.Errorf("no key: %d rule %q %s", code, h.Get("X-Gateway-Rule"), body)
	}
	if r := e.chat(t, chatParams(sharedModel), false, withKey("anything"), option.WithHeader("X-Gateway-Metadata", `{"tier":"gold"}`)); r.err != nil || r.header.Get("X-Gateway-Target") != "eu" {
		t.Errorf("claimed tier: %v %v", r.err, r.header)
	}
	if code, _, _ := e.post(t, "/v1/models", ""); code != 200 {
		t.Errorf("/v1/models without a key: %d", code)
	}
	e.wantCalls(t, 1, 0, 0, 1)
}

func TestAuthRefusesWithoutAValidKey(t *testing.T) {
	e := newEnvWith(t, envOptions{auth: authBlock})
	modes(t, func(t *testing.T, stream bool) {
		for _, key := range []string{"", "sy-wrong", hexSHA256(acmeKey)} {
			opts := []option.RequestOption{withKey(key)}
			if key == "" {
				opts = []option.RequestOption{option.WithHeaderDel("Authorization")}
			}
			r := e.chat(t, chatParams("gpt-4o"), stream, opts...)
			ae := apiError(t, r.err)
			if ae.StatusCode != 401 || ae.Code != "invalid_api_key" || ae.Type != "invalid_request_error" {
				t.Errorf("key %q: %d %s %s", key, ae.StatusCode, ae.Type, ae.Code)
			}
		}
	})
	if code, _, _ := e.post(t, "/v1/models", ""); code != 401 {
		t.Errorf("/v1/models without a key: %d; want 401", code)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _, _ := e.post(t, p, ""); code != 200 {
			t.Errorf("%s without a key: %d; want 200", p, code)
		}
	}
	e.wantCalls(t, 0, 0, 0, 0)
}

func TestAuthBothHeaderForms(t *testing.T) {
	e := newEnvWith(t, envOptions{auth: authBlock})
	for _, hdr := range [][]string{
		{"Authorization", "Bearer " + acmeKey},
		{"x-api-key", acmeKey},
		{"Authorization", "Bearer " + acmeKey, "x-api-key", acmeKey},
	} {
		if code, h, body := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o"}`, hdr...); code != 200 || h.Get("X-Gateway-Target") != "openai" {
			t.Errorf("%q: %d %s", hdr[0], code, body)
		}
	}
	e.wantCalls(t, 3, 0, 0, 0)
}

func TestAuthBindingsPinTheTenant(t *testing.T) {
	e := newEnvWith(t, envOptions{auth: authBlock})
	claims := []option.RequestOption{option.WithHeader("X-Gateway-Metadata", `{"tier":"gold"}`)}
	vip := chatParams(sharedModel)
	vip.User = openai.String("vip")
	modes(t, func(t *testing.T, stream bool) {
		// acme claims user vip and tier gold: its bindings win, so neither
		// the vip rule (2) nor the gold rule (3) matches.
		r := e.chat(t, vip, stream, append(claims, withKey(acmeKey))...)
		if r.err != nil {
			t.Fatal(r.err)
		}
		wantHeaders(t, r.header, "openai", "", "", "", "fallback")
		// gold sends no header at all and reaches eu (rule 3).
		r = e.chat(t, chatParams(sharedModel), stream, withKey(goldKey))
		if r.err != nil {
			t.Fatal(r.err)
		}
		wantHeaders(t, r.header, "eu", "openai", sharedModel, "1", "3")
		// tight binds nothing: its claim of vip routes (rule 2).
		r = e.chat(t, vip, stream, withKey(tightKey))
		if r.err != nil {
			t.Fatal(r.err)
		}
		wantHeaders(t, r.header, "openai", "", "", "", "2")
	})
	e.wantCalls(t, 4, 0, 0, 2)
	// The body reaches the upstream as the client wrote it: user vip.
	if b := string(e.openai.last(t).body); !strings.Contains(b, `"user":"vip"`) {
		t.Errorf("body upstream %s", b)
	}
}

func TestAuthAllowList(t *testing.T) {
	e := newEnvWith(t, envOptions{auth: authBlock})
	modes(t, func(t *testing.T, stream bool) {
		for _, model := range []string{"gpt-4o", unmatchedModel, "no-such-model"} {
			ae := apiError(t, e.chat(t, chatParams(model), stream, withKey(tightKey)).err)
			if ae.StatusCode != 403 || ae.Code != "model_not_allowed" || ae.Type != "invalid_request_error" {
				t.Errorf("%s: %d %s %s", model, ae.StatusCode, ae.Type, ae.Code)
			}
		}
	})
	e.wantCalls(t, 0, 0, 0, 0)
	if r := e.chat(t, chatParams(sharedModel), false, withKey(tightKey)); r.err != nil {
		t.Errorf("allowed model: %v", r.err)
	}
}

func TestAuthModelsPerKey(t *testing.T) {
	e := newEnvWith(t, envOptions{auth: authBlock})
	list := func(key string) []string {
		code, _, body := e.post(t, "/v1/models", "", "x-api-key", key)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		var out struct{ Data []struct{ ID string } }
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range out.Data {
			ids = append(ids, m.ID)
		}
		return ids
	}
	// Bare requests: gpt-4o → openai, claude → anthropic/bedrock,
	// gpt-4o-mini → openai (fallback); mistral-large only reaches eu, which
	// only the gold binding selects.
	all := strings.Join([]string{claudeModel, "gpt-4o", sharedModel}, ",")
	for _, c := range []struct{ key, want string }{
		{acmeKey, all},
		{goldKey, strings.Join([]string{claudeModel, "gpt-4o", sharedModel, unmatchedModel}, ",")},
		{tightKey, sharedModel},
	} {
		if got := strings.Join(list(c.key), ","); got != c.want {
			t.Errorf("key %s lists %s; want %s", c.key[:8], got, c.want)
		}
	}
}

func TestAuthReloadRevokes(t *testing.T) {
	e := newEnvWith(t, envOptions{auth: authBlock})
	if r := e.chat(t, chatParams("gpt-4o"), false, withKey(goldKey)); r.err != nil {
		t.Fatal(r.err)
	}
	// A stream in flight on the old configuration finishes after gold is
	// revoked; gold's next request is refused.
	e.anth.hold()
	done := make(chan result, 1)
	go func() { done <- e.chat(t, chatParams(claudeModel), true, withKey(goldKey)) }()
	waitFor(t, 5*time.Second, "the held request", func() bool { return e.anth.n() == 1 })
	e.writeConfig(t, envOptions{auth: strings.Replace(authBlock, "    - name: gold\n      key: "+goldKey+"\n      metadata: {tier: gold}\n", "", 1)})
	if got := e.d.Reload(); got != daemon.ReloadSuccess {
		t.Fatalf("reload %s\n%s", got, e.logs)
	}
	ae := apiError(t, e.chat(t, chatParams("gpt-4o"), false, withKey(goldKey)).err)
	if ae.StatusCode != 401 {
		t.Errorf("revoked key: %d", ae.StatusCode)
	}
	e.anth.release()
	if r := <-done; r.err != nil || r.content != anthropicText() {
		t.Errorf("in-flight stream: %v %q", r.err, r.content)
	}
	if r := e.chat(t, chatParams("gpt-4o"), false, withKey(acmeKey)); r.err != nil {
		t.Errorf("kept key: %v", r.err)
	}
	e.wantCalls(t, 2, 1, 0, 0)
}

// rawRequest writes a request with the given header lines over a fresh
// connection and returns the status line.
func (e *env) rawRequest(t *testing.T, headers ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp4", strings.TrimPrefix(e.base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	body := `{"model":"gpt-4o"}`
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		strings.Join(headers, "\r\n") + "\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestAuthRepeatedKeyHeaders(t *testing.T) {
	e := newEnvWith(t, envOptions{auth: authBlock})
	for _, hdrs := range [][]string{
		{"Authorization: Bearer " + acmeKey, "Authorization: Bearer " + goldKey},
		{"Authorization: Bearer " + acmeKey, "authorization: Bearer " + acmeKey},
		{"x-api-key: " + acmeKey, "X-Api-Key: " + goldKey},
		{"X-Api-Key:", "x-api-key: " + goldKey},
		{"Authorization: Bearer " + acmeKey, "x-api-key: " + goldKey},
	} {
		if got := e.rawRequest(t, hdrs...); got != "HTTP/1.1 400 Bad Request" {
			t.Errorf("%q: %s; want 400", hdrs, got)
		}
	}
	if got := e.rawRequest(t, "x-api-key: "+acmeKey); got != "HTTP/1.1 200 OK" {
		t.Errorf("one key: %s", got)
	}
	e.wantCalls(t, 1, 0, 0, 0)
}

// No client key reaches an upstream, a log line (at debug level, access
// log included) or /metrics; the access log names the key.
func TestAuthKeysStaySecret(t *testing.T) {
	e := newEnvWith(t, envOptions{auth: authBlock, logLevel: "debug"})
	for _, stream := range []bool{false, true} {
		for _, key := range []string{acmeKey, goldKey} {
			for _, model := range []string{"gpt-4o", claudeModel, sharedModel} {
				if r := e.chat(t, chatParams(model), stream, withKey(key)); r.err != nil {
					t.Fatal(r.err)
				}
			}
			if code, _, _ := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o"}`, "x-api-key", key); code != 200 {
				t.Fatal(code)
			}
		}
	}
	_ = e.chat(t, chatParams("gpt-4o"), false, withKey("sy-wrong-key-must-not-be-logged"))
	_, _, metrics := e.post(t, "/metrics", "")
	secrets := []string{acmeKey, goldKey, tightKey, hexSHA256(goldKey)[:16], "sy-wrong-key-must-not-be-logged"}
	var reqs []received
	for _, r := range [][]received{e.openai.all(), e.eu.all(), e.anth.all(), e.bed.all()} {
		reqs = append(reqs, r...)
	}
	if len(reqs) != 16 {
		t.Errorf("%d upstream requests; want 16", len(reqs))
	}
	for _, s := range secrets {
		for i, rq := range reqs {
			for k, vs := range rq.header {
				if strings.Contains(strings.Join(vs, " "), s) {
					t.Errorf("upstream request %d: header %s carries a client key", i, k)
				}
			}
			if strings.Contains(string(rq.body), s) || strings.Contains(rq.uri, s) {
				t.Errorf("upstream request %d carries a client key", i)
			}
		}
		if strings.Contains(e.logs.String(), s) {
			t.Errorf("the log carries client key %q", s[:10])
		}
		if strings.Contains(metrics, s) {
			t.Errorf("/metrics carries client key %q", s[:10])
		}
	}
	logs := e.logs.String()
	for _, name := range []string{`"key":"acme"`, `"key":"gold"`} {
		if !strings.Contains(logs, name) {
			t.Errorf("no access line with %s", name)
		}
	}
}
