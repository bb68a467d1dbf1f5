package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
)

// Every upstream receives its own credential, in its provider's header,
// and nothing else: not the client's key, not another target's key, not
// the X-Gateway-Metadata header. No key reaches the gateway's log, even at
// debug level.
func TestCredentialsStayWithTheirTarget(t *testing.T) {
	e := newEnvWith(t, envOptions{logLevel: "debug"})
	gold := option.WithHeader("X-Gateway-Metadata", `{"tier":"gold"}`)
	for _, stream := range []bool{false, true} {
		// openai (rule 0), eu (rule 3), anthropic then bedrock (rule 1).
		if r := e.chat(t, chatParams("gpt-4o"), stream, gold); r.err != nil {
			t.Fatal(r.err)
		}
		if r := e.chat(t, chatParams(sharedModel), stream, gold); r.err != nil {
			t.Fatal(r.err)
		}
		if r := e.chat(t, chatParams(claudeModel), stream, gold); r.err != nil {
			t.Fatal(r.err)
		}
		e.anth.failWith(&anthropicFailure{status: 529, typ: "overloaded_error", msg: "Overloaded"})
		if r := e.chat(t, chatParams(claudeModel), stream, gold); r.err != nil || r.header.Get("X-Gateway-Target") != "bedrock" {
			t.Fatalf("want bedrock's answer after a 529, got %v", r.err)
		}
		e.anth.failWith(nil)
	}
	e.wantCalls(t, 2, 4, 2, 2)

	all := []string{clientKey, openaiKey, euKey, anthropicKey, bedrockKey}
	check := func(name string, reqs []received, own string, want func(h http.Header) bool) {
		t.Helper()
		for i, rq := range reqs {
			if !want(rq.header) {
				t.Errorf("%s request %d: credential headers %v", name, i, credentialHeaders(rq.header))
			}
			if rq.header.Get("X-Gateway-Metadata") != "" {
				t.Errorf("%s request %d received X-Gateway-Metadata", name, i)
			}
			for _, key := range all {
				if key == own {
					continue
				}
				for k, vs := range rq.header {
					for _, v := range vs {
						if strings.Contains(v, key) {
							t.Errorf("%s request %d: header %s carries a foreign key %q", name, i, k, key)
						}
					}
				}
				if strings.Contains(string(rq.body), key) || strings.Contains(rq.uri, key) {
					t.Errorf("%s request %d: body or URI carries a foreign key %q", name, i, key)
				}
			}
		}
	}
	check("openai", e.openai.all(), openaiKey, func(h http.Header) bool {
		return h.Get("Authorization") == "Bearer "+openaiKey && h.Get("X-Api-Key") == ""
	})
	check("eu", e.eu.all(), euKey, func(h http.Header) bool {
		return h.Get("Authorization") == "Bearer "+euKey && h.Get("X-Api-Key") == ""
	})
	check("anthropic", e.anth.all(), anthropicKey, func(h http.Header) bool {
		return h.Get("X-Api-Key") == anthropicKey && h.Get("Authorization") == ""
	})
	check("bedrock", e.bed.all(), bedrockKey, func(h http.Header) bool {
		return h.Get("Authorization") == "Bearer "+bedrockKey && h.Get("X-Api-Key") == ""
	})

	logs := e.logs.String()
	if !strings.Contains(logs, `"target":"bedrock"`) {
		t.Errorf("access log names no bedrock target; logs:\n%s", logs)
	}
	for _, key := range all {
		if strings.Contains(logs, key) {
			t.Errorf("a credential (%q) reached the log", key)
		}
	}
}

// credentialHeaders returns the credential-bearing headers of h, for a
// failure message (test keys only).
func credentialHeaders(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range []string{"Authorization", "X-Api-Key"} {
		if v := h.Values(k); len(v) > 0 {
			out[k] = v
		}
	}
	return out
}
