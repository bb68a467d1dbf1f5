package upstream

import (
	"testing"
	"time"
)

func BenchmarkBreakerAllowDoneParallel(b *testing.B) {
	br := NewBreaker(BreakerSettings{FailureThreshold: 5, OpenTimeout: time.Second})
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if tk, ok := br.Allow(now); ok {
				br.Done(tk, ClassOK, now)
			}
		}
	})
}

func BenchmarkParkParked(b *testing.B) {
	var p Park
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if p.Parked(now) {
				b.Fatal("parked")
			}
		}
	})
}

func BenchmarkLimiterAcquireReleaseParallel(b *testing.B) {
	l := NewLimiter(1<<20, 0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if ok, _ := l.Acquire(time.Time{}, nil); ok {
				l.Release()
			}
		}
	})
}

func BenchmarkRewriteModel(b *testing.B) {
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about gateways and the model that routes them."}],"temperature":0.2,"stream":true}`)
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		dst, _ = RewriteModel(dst[:0], body, []byte("gpt-4o-2024-08-06"))
	}
}
