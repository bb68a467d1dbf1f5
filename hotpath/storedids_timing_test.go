package hotpath

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// BenchmarkStoredIDsPrecheck measures the pre-check of stored ids on
// realistic chat bodies (chatBody: prose, code, tool calls, underscores
// and escapes everywhere) of 1 KB and 100 KB that name none: files (chat,
// messages) and files+items (the Responses API's reading; its body's
// tool call ids renamed, as a Responses body has none). Its twins are the peek of
// the same body (the read every request pays) and the fastjson parse the
// pre-check spares: the ratios are the figures.
func BenchmarkStoredIDsPrecheck(b *testing.B) {
	for _, size := range []int{1 << 10, 100 << 10} {
		body := chatBody(size)
		noIDs := bytes.ReplaceAll(body, []byte(`"id":`), []byte(`"ix":`))
		if mayNameStored(body, true, false) || mayNameStored(noIDs, true, true) {
			b.Fatal("the benchmark body names a stored id")
		}
		name := strconv.Itoa(size>>10) + "KB"
		b.Run(name+"/files", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				mayNameStored(body, true, false)
			}
		})
		b.Run(name+"/files+items", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				mayNameStored(noIDs, true, true)
			}
		})
		b.Run(name+"/peek", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			p := &peek{}
			for b.Loop() {
				if err := p.parse(body, false); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/fastjson", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var p fastjson.Parser
			for b.Loop() {
				if _, err := p.ParseBytes(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHandlerStoredIDs sends chat bodies naming no stored id through
// the whole gateway (as BenchmarkHandlerBodies) with a client key, with no
// store of file owners, an empty one (the check is skipped: no id can be
// another key's), and one holding another key's files (every body is
// pre-checked): the rows of one size differ by the pre-check's cost.
func BenchmarkHandlerStoredIDs(b *testing.B) {
	up := startConstUpstream(b)
	for _, size := range []int{1 << 10, 100 << 10} {
		body := bytes.Replace(chatBody(size), []byte(`"stream":true`), []byte(`"stream":false`), 1)
		for _, c := range []struct {
			name  string
			store func() tenancy.ObjectStore
		}{
			{"no-store", func() tenancy.ObjectStore { return nil }},
			{"empty-store", func() tenancy.ObjectStore { return tenancy.NewMemoryObjects(0, nil) }},
			{"holding", func() tenancy.ObjectStore {
				s := tenancy.NewMemoryObjects(0, nil)
				_ = s.Put(context.Background(), tenancy.Object{Kind: tenancy.KindFile, ID: "file-1", Key: "other", Target: "a"}, time.Hour)
				return s
			}},
		} {
			b.Run(strconv.Itoa(size>>10)+"KB/"+c.name, func(b *testing.B) {
				st, err := Build(mustParse(b, `
server: {max_request_bytes: 10485760}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://`+up+`/v1", api_key: k}
auth:
  keys:
    - {name: acme, key: sy-acme}
`), upstream.NewPool(), time.Now())
				if err != nil {
					b.Fatal(err)
				}
				g := New(st)
				g.Objects = c.store()
				benchBodies(b, NewServer(g, quietLogger{}, false), body, "Authorization", "Bearer sy-acme")
			})
		}
	}
}
