package hotpath

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// BenchmarkHandlerResidency runs whole proxied requests with a key among
// 10,000 and a Finished hook (as the daemon always has one): plain; with
// every key's residency guard on; and with each request written to the
// audit log. The ratios to "keys" are the per-request cost of each.
func BenchmarkHandlerResidency(b *testing.B) {
	ln := answeringUpstream(b, []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`))
	for _, mode := range []string{"keys", "residency", "audit"} {
		b.Run(mode, func(b *testing.B) {
			cfg := mustParse(b, `
strategy:
  mode: conditional
  conditions: [{key: model, value: gpt-4o, target_key: a}]
targets: [{virtual_key: a, provider: openai, residency: eu, base_url: "http://`+ln.Addr().String()+`/v1"}]
`)
			for i := range benchKeys {
				k := config.ClientKey{Name: fmt.Sprintf("k%d", i), Digest: sha256.Sum256([]byte(benchKey(i))), User: fmt.Sprintf("u%d", i)}
				if mode == "residency" {
					k.Residency = []string{"eu"}
				}
				cfg.Auth.Keys = append(cfg.Auth.Keys, k)
			}
			st, err := Build(cfg, upstream.NewPool(), time.Unix(0, 0))
			if err != nil {
				b.Fatal(err)
			}
			g := New(st)
			g.Finished = func(*telemetry.Entry) {}
			if mode == "audit" {
				priv, _, _ := audit.GenerateKey()
				key, _ := audit.ParsePrivateKey(priv)
				l, err := audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), Key: key, Replica: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				g.Finished = func(e *telemetry.Entry) { l.Add(e, "hash") }
				g.AuditBehind = l.Behind
			}
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
