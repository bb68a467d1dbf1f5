package hotpath

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// FuzzAuthenticate: whatever Authorization and x-api-key lines a client
// sends, the key check admits exactly one presentation of the configured
// key (one header, or both carrying it), answers 400 or 401 otherwise, and
// never quotes what was presented.
func FuzzAuthenticate(f *testing.F) {
	for _, s := range [][4]string{
		{"Bearer sy-open", "", "", ""}, {"", "sy-open", "", ""}, {"bearer sy-open", "sy-open", "", ""},
		{"Bearer sy-open", "", "Bearer sy-open", ""}, {"", "sy-open", "", "sy-open"}, {"Basic sy-open", "", "", ""},
		{"Bearer  sy-open ", "", "", ""}, {"Bearersy-open", "", "", ""}, {"Bearer", "sy-open", "", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	st, err := Build(mustParse(f, `
strategy: {mode: conditional, conditions: [{key: model, value: m, target_key: a}]}
targets: [{virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1"}]
auth: {keys: [{name: open, key: sy-open}]}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, auth1, key1, auth2, key2 string) {
		var hdrs string
		for _, v := range []string{auth1, auth2} {
			if v != "" {
				hdrs += "Authorization: " + v + "\r\n"
			}
		}
		for _, v := range []string{key1, key2} {
			if v != "" {
				hdrs += "x-api-key: " + v + "\r\n"
			}
		}
		var req fasthttp.Request
		if err := parseRequest(t, &req, "/v1/chat/completions", hdrs, nil); err != nil {
			return // not a request fasthttp would hand the handler
		}
		var rc fasthttp.RequestCtx
		rc.Init(&req, nil, nil)
		k, ok := authenticate(&rc, st, router.SurfaceChat)
		// What fasthttp kept of each value (it drops what a header cannot hold).
		got := func(name string) []string {
			var out []string
			for n, v := range req.Header.All() {
				if strings.EqualFold(string(n), name) {
					out = append(out, string(v))
				}
			}
			return out
		}
		auths, keys := got("Authorization"), got("X-Api-Key")
		bearerOK := len(auths) == 1 && func() bool { tok, ok := bearerToken([]byte(auths[0])); return ok && string(tok) == "sy-open" }()
		keyOK := len(keys) == 1 && keys[0] == "sy-open"
		want := len(auths) <= 1 && len(keys) <= 1 && (bearerOK && (len(keys) == 0 || keyOK) || keyOK && len(auths) == 0)
		if ok != want || ok && k.spec.Name != "open" {
			t.Fatalf("Authorization %q x-api-key %q: admitted %v, want %v (%d %s)", auths, keys, ok, want, rc.Response.StatusCode(), rc.Response.Body())
		}
		if !ok {
			if s := rc.Response.StatusCode(); s != 400 && s != 401 {
				t.Fatalf("status %d", s)
			}
			body := string(rc.Response.Body())
			// The gateway's own text: the message and the envelope.
			own := string(upstream.AppendError(nil, "", "invalid_request_error", "invalid_api_key")) + string(upstream.AppendError(nil, "", "invalid_request_error", "invalid_request"))
			for _, v := range append(auths, keys...) {
				if len(v) >= 8 && strings.Contains(body, v) && !strings.Contains(own, v) && !strings.Contains(authMessages, v) {
					t.Fatalf("the answer quotes %q: %s", v, body)
				}
			}
		}
	})
}

// authMessages holds the fixed messages of authenticate's answers.
const authMessages = "the Authorization or x-api-key header is repeated; send the client key once\n" +
	"the Authorization header is not \"Bearer <key>\"; send the client key as Authorization: Bearer <key> or x-api-key: <key>\n" +
	"the Authorization and x-api-key headers carry different keys; send one client key\n" +
	"no client key; send it as Authorization: Bearer <key> or x-api-key: <key>\n" +
	"the client key is not valid"
