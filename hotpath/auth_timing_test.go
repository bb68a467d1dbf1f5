package hotpath

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// benchKeys is the key count of the key check benchmarks (issue 11: at
// most 1 µs per request at 10,000 keys, hash included).
const benchKeys = 10_000

// benchKeyState builds a State with benchKeys client keys ("sy-bench-N",
// each bound to its own user) and returns it with the keys' digests.
func benchKeyState(b *testing.B) (*State, [][32]byte) {
	b.Helper()
	cfg := &config.Config{
		Strategy: config.Strategy{Mode: "conditional", Conditions: []config.Condition{{Key: "model", Value: "gpt-4o", TargetKey: "a"}}},
		Targets:  []config.Target{{VirtualKey: "a", Provider: "openai", BaseURL: "http://127.0.0.1:1/v1"}},
	}
	digests := make([][32]byte, benchKeys)
	for i := range benchKeys {
		digests[i] = sha256.Sum256([]byte(benchKey(i)))
		cfg.Auth.Keys = append(cfg.Auth.Keys, config.ClientKey{Name: fmt.Sprintf("k%d", i), Digest: digests[i], User: fmt.Sprintf("u%d", i)})
	}
	st, err := Build(cfg, upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	return st, digests
}

// benchKey is a key as long as those switchyard keys new prints.
func benchKey(i int) string { return fmt.Sprintf("sy-bench-%040d", i) }

// BenchmarkKeyCheck is the whole check of an authenticated request: the
// header scan, SHA-256 of the presented key and the map lookup.
func BenchmarkKeyCheck(b *testing.B) {
	st, _ := benchKeyState(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var req fasthttp.Request
		if err := parseRequest(b, &req, "/v1/chat/completions", "User-Agent: OpenAI/Python 1.50.0\r\nAccept: application/json\r\n"+
			"Authorization: Bearer "+benchKey(benchKeys/2)+"\r\nX-Stainless-Lang: python\r\n", nil); err != nil {
			b.Fatal(err)
		}
		var rc fasthttp.RequestCtx
		rc.Init(&req, nil, nil)
		for pb.Next() {
			if k, ok := authenticate(&rc, st, router.SurfaceChat); !ok || k.spec.Name != "k5000" {
				b.Fatal("key not found")
			}
		}
	})
}

// BenchmarkKeyCheckHashOnly is the SHA-256 of the key alone: the floor of
// BenchmarkKeyCheck.
func BenchmarkKeyCheckHashOnly(b *testing.B) {
	key := []byte(benchKey(benchKeys / 2))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var sink byte
		for pb.Next() {
			sum := sha256.Sum256(key)
			sink ^= sum[0]
		}
		_ = sink
	})
}

// BenchmarkKeyCheckLinear is the naive twin: the digest compared in
// constant time with every configured one, as a list would be scanned.
func BenchmarkKeyCheckLinear(b *testing.B) {
	_, digests := benchKeyState(b)
	key := []byte(benchKey(benchKeys / 2))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			sum := sha256.Sum256(key)
			found := -1
			for i := range digests {
				if subtle.ConstantTimeCompare(sum[:], digests[i][:]) == 1 {
					found = i
				}
			}
			if found != benchKeys/2 {
				b.Fatal("key not found")
			}
		}
	})
}

// BenchmarkRouteRequestWithKey is BenchmarkRouteRequest with client keys:
// the key check at 10,000 keys, the allow-list, and the bound user and
// metadata merged into the routing fields. Its ratio to
// BenchmarkRouteRequest is the cost of auth in the hot path's own work.
func BenchmarkRouteRequestWithKey(b *testing.B) {
	var conds strings.Builder
	for i := range 49 {
		conds.WriteString("    - {key: model, value: m" + strings.Repeat("x", i) + ", target_key: b}\n")
	}
	conds.WriteString("    - {key: metadata, field: tier, value: gold, target_keys: [b, a]}\n")
	cfg := mustParse(b, `
strategy:
  mode: conditional
  conditions:
`+conds.String()+`
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: k}
  - {virtual_key: b, provider: openai, base_url: "http://127.0.0.1:2/v1", api_key: k}
`)
	for i := range benchKeys {
		cfg.Auth.Keys = append(cfg.Auth.Keys, config.ClientKey{Name: fmt.Sprintf("k%d", i), Digest: sha256.Sum256([]byte(benchKey(i))),
			User: fmt.Sprintf("u%d", i), Metadata: map[string]string{"tier": "gold"}, Models: []string{"gpt-4o", "claude-*"}})
	}
	st, err := Build(cfg, upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var rc fasthttp.RequestCtx
		if err := parseRequest(b, &rc.Request, "/v1/chat/completions", "X-Gateway-Metadata: {\"tier\":\"silver\",\"team\":\"search\"}\r\n"+
			"Authorization: Bearer "+benchKey(benchKeys/2)+"\r\n", benchBody); err != nil {
			b.Fatal(err)
		}
		sc := &scratch{}
		for pb.Next() {
			setRequestID(&rc)
			k, ok := authenticate(&rc, st, router.SurfaceChat)
			sc.key = k
			if !ok || !routeRequest(&rc, st, router.SurfaceChat, false, sc) || len(sc.cands) != 2 {
				b.Fatalf("not routed: %s", rc.Response.Body())
			}
		}
	})
}

// BenchmarkHandlerAuth runs whole proxied requests through Gateway.Handler
// (routing, the walk over a loopback upstream, the answer) with auth off
// and with a key checked among 10,000: the ratio of the two is the cost of
// client keys per request, upstream round trip included.
func BenchmarkHandlerAuth(b *testing.B) {
	ln := answeringUpstream(b, []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`))
	for _, withKeys := range []bool{false, true} {
		name := "open"
		if withKeys {
			name = "keys-10000"
		}
		b.Run(name, func(b *testing.B) {
			cfg := mustParse(b, `
strategy:
  mode: conditional
  conditions: [{key: model, value: gpt-4o, target_key: a}]
targets: [{virtual_key: a, provider: openai, base_url: "http://`+ln.Addr().String()+`/v1"}]
`)
			if withKeys {
				for i := range benchKeys {
					cfg.Auth.Keys = append(cfg.Auth.Keys, config.ClientKey{Name: fmt.Sprintf("k%d", i),
						Digest: sha256.Sum256([]byte(benchKey(i))), User: fmt.Sprintf("u%d", i)})
				}
			}
			st, err := Build(cfg, upstream.NewPool(), time.Unix(0, 0))
			if err != nil {
				b.Fatal(err)
			}
			g := New(st)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var req fasthttp.Request
				if err := parseRequest(b, &req, "/v1/chat/completions", "Authorization: Bearer "+benchKey(benchKeys/2)+"\r\n",
					[]byte(`{"model":"gpt-4o","user":"alice","messages":[{"role":"user","content":"`+strings.Repeat("Tell me about routing. ", 40)+`"}]}`)); err != nil {
					b.Fatal(err)
				}
				var rc fasthttp.RequestCtx
				rc.Init(&req, nil, nil)
				for pb.Next() {
					rc.Response.Reset()
					g.Handler(&rc)
					if rc.Response.StatusCode() != 200 {
						b.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
					}
				}
			})
		})
	}
}
