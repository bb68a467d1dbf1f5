package router

import (
	"fmt"
	"strconv"
	"testing"
)

// Benchmarks of the compiled Match against its baseline twin, a linear
// scan of the same rules (linearMatch). Reproduce with:
//
//	go test -run '^$' -bench 'BenchmarkMatch|BenchmarkLinearScan|BenchmarkServesModel' -benchtime 200ms ./router/

var benchSizes = []int{10, 1000, 10000}

// benchRules builds n rules in a realistic mix: 40% exact models, 20%
// model prefixes, 20% users, 16% metadata on three fields, and a stream and
// a has_tools rule near the end, over four targets.
func benchRules(n int) ([]RuleSpec, []TargetSpec) {
	targets := []TargetSpec{
		{Name: "openai", Provider: "openai", Surfaces: AllSurfaces},
		{Name: "anthropic", Provider: "anthropic", Surfaces: 1 << SurfaceChat, Models: []string{"claude-*"}},
		{Name: "bedrock", Provider: "bedrock", Surfaces: 1 << SurfaceChat, Models: []string{"claude-3-haiku", "llama3-70b"}},
		{Name: "vllm", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"qwen*", "llama*"}},
	}
	fields := []string{"tier", "team", "region"}
	rules := make([]RuleSpec, n)
	for i := range rules {
		chain := []int{i % 4, (i + 1) % 4}
		switch {
		case i == n-2:
			rules[i] = RuleSpec{Key: KeyStream, Value: "true", Chain: chain}
		case i == n-1:
			rules[i] = RuleSpec{Key: KeyHasTools, Value: "true", Chain: chain}
		case i%25 < 10:
			rules[i] = RuleSpec{Key: KeyModel, Value: "model-" + strconv.Itoa(i), Chain: chain}
		case i%25 < 15:
			rules[i] = RuleSpec{Key: KeyModelPrefix, Value: "family-" + strconv.Itoa(i) + "-", Chain: chain}
		case i%25 < 20:
			rules[i] = RuleSpec{Key: KeyUser, Value: "user-" + strconv.Itoa(i), Chain: chain}
		default:
			rules[i] = RuleSpec{Key: KeyMetadata, Field: fields[i%3], Value: "v" + strconv.Itoa(i), Chain: chain}
		}
	}
	return rules, targets
}

// benchRequests builds requests that hit rules of every kind spread over
// the rule list, plus requests that match nothing (the linear scan's worst
// case, common in practice: most traffic often falls back).
func benchRequests(rules []RuleSpec) []Request {
	var reqs []Request
	for k := 1; k <= 8; k++ {
		r := rules[(len(rules)-1)*k/8]
		req := Request{Surface: SurfaceChat, Model: []byte("gpt-4o-mini"), User: []byte("someone"), HasUser: true,
			Metadata: []Pair{{Key: []byte("tier"), Value: []byte("silver")}, {Key: []byte("team"), Value: []byte("search")}}}
		switch r.Key {
		case KeyModel:
			req.Model = []byte(r.Value)
		case KeyModelPrefix:
			req.Model = []byte(r.Value + "instruct-v2")
		case KeyUser:
			req.User = []byte(r.Value)
		case KeyMetadata:
			req.Metadata = append(req.Metadata[:1:1], Pair{Key: []byte(r.Field), Value: []byte(r.Value)})
		case KeyStream:
			req.Stream = true
		case KeyHasTools:
			req.HasTools = true
		}
		reqs = append(reqs, req)
	}
	reqs = append(reqs,
		Request{Surface: SurfaceChat, Model: []byte("claude-3-5-sonnet-20241022"), User: []byte("u-123"), HasUser: true},
		Request{Surface: SurfaceEmbeddings, Model: []byte("text-embedding-3-small")},
		Request{Surface: SurfaceCompletions, Model: []byte("family-x"),
			Metadata: []Pair{{Key: []byte("region"), Value: []byte("eu")}}},
	)
	return reqs
}

func BenchmarkMatch(b *testing.B) {
	for _, n := range benchSizes {
		rules, targets := benchRules(n)
		s, err := Compile(rules, targets, 0)
		if err != nil {
			b.Fatal(err)
		}
		reqs := benchRequests(rules)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			sink := 0
			for i := 0; b.Loop(); i++ {
				rule, _ := s.Match(&reqs[i%len(reqs)])
				sink += rule
			}
			benchSink = sink
		})
		b.Run(fmt.Sprintf("%d/parallel", n), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				sink := 0
				for i := 0; pb.Next(); i++ {
					rule, _ := s.Match(&reqs[i%len(reqs)])
					sink += rule
				}
				benchSink = sink
			})
		})
	}
}

func BenchmarkLinearScan(b *testing.B) {
	for _, n := range benchSizes {
		rules, _ := benchRules(n)
		reqs := benchRequests(rules)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			sink := 0
			for i := 0; b.Loop(); i++ {
				rule, _ := linearMatch(rules, &reqs[i%len(reqs)])
				sink += rule
			}
			benchSink = sink
		})
		b.Run(fmt.Sprintf("%d/parallel", n), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				sink := 0
				for i := 0; pb.Next(); i++ {
					rule, _ := linearMatch(rules, &reqs[i%len(reqs)])
					sink += rule
				}
				benchSink = sink
			})
		})
	}
}

func BenchmarkServesModel(b *testing.B) {
	_, targets := benchRules(10)
	s, err := Compile(nil, targets, 0)
	if err != nil {
		b.Fatal(err)
	}
	models := [][]byte{[]byte("claude-3-haiku"), []byte("llama3-70b"), []byte("qwen2.5-72b"), []byte("gpt-4o")}
	b.ReportAllocs()
	n := 0
	for i := 0; b.Loop(); i++ {
		if s.ServesModel(i%4, models[i%len(models)]) {
			n++
		}
	}
	benchSink = n
}

var benchSink int
