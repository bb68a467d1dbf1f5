package quota

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
)

// refSpend is the reference model of spend, in exact arithmetic: prices
// are given in hundredths of a micro-USD per token (USD per 1M tokens ×
// 100); a cache price not given (< 0) is the input price. The result is
// micro-USD rounded up.
func refSpend(in, read, write, out, pIn, pOut, pRead, pWrite int64) int64 {
	if pRead < 0 {
		pRead = pIn
	}
	if pWrite < 0 {
		pWrite = pIn
	}
	sum := new(big.Int).Mul(big.NewInt(in), big.NewInt(pIn))
	sum.Add(sum, new(big.Int).Mul(big.NewInt(read), big.NewInt(pRead)))
	sum.Add(sum, new(big.Int).Mul(big.NewInt(write), big.NewInt(pWrite)))
	sum.Add(sum, new(big.Int).Mul(big.NewInt(out), big.NewInt(pOut)))
	q, r := new(big.Int).QuoRem(sum, big.NewInt(100), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// refCounted is the reference model of the tokens a limit counts.
func refCounted(in, read, write, out int64, cacheReads bool) int64 {
	if cacheReads {
		return in + read + write + out
	}
	return in + write + out
}

// TestSpendAndCountsAgainstReference: over random usages, prices with and
// without cache prices, and every count_cache_reads setting on the key
// and the target, a settled request's spend and the tokens each limit
// counted match the reference model (spend may be one micro-USD above it
// where float arithmetic lands just past a whole number: never below);
// an answer without usage leaves the reservation counted.
func TestSpendAndCountsAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	tokens := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return rng.Int64N(100)
		}
		return rng.Int64N(2_000_000)
	}
	price := func() int64 { return rng.Int64N(10000) } // up to $100 per 1M, in cents
	usd := func(c int64) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }
	dollars := func(c int64) float64 { return float64(c) / 100 } // as YAML's 2.50 decodes
	flag := func() (string, int) {
		switch i := rng.IntN(3); i {
		case 0:
			return "", i
		case 1:
			return ", count_cache_reads: true", i
		default:
			return ", count_cache_reads: false", i
		}
	}
	exact, over := 0, 0
	for n := range 2000 {
		in, read, write, out := tokens(), tokens(), tokens(), tokens()
		pIn, pOut, pRead, pWrite := price(), price(), int64(-1), int64(-1)
		fields := "input: " + usd(pIn) + ", output: " + usd(pOut)
		cp := config.Price{Input: dollars(pIn), Output: dollars(pOut)}
		if rng.IntN(2) == 0 {
			pRead = price()
			fields += ", cache_read: " + usd(pRead)
			cp.CacheRead, cp.HasCacheRead = dollars(pRead), true
		}
		if rng.IntN(2) == 0 {
			pWrite = price()
			fields += ", cache_write: " + usd(pWrite)
			cp.CacheWrite, cp.HasCacheWrite = dollars(pWrite), true
		}
		keyFlag, kf := flag()
		targetFlag, tf := flag()
		cfg := testConfig(t, "", "      limits: {tokens_per_day: 1000000000000"+keyFlag+"}",
			"    limits: {tokens_per_day: 1000000000000"+targetFlag+"}")
		cfg.Targets[0].Prices["gpt-4o"] = cp
		_, p := memQuotas(t, cfg)
		known := rng.IntN(10) > 0
		var r Request
		if !r.Begin(p, "acme", bodyOf(1000+rng.IntN(5000)), []byte("gpt-4o"), time.Now()) {
			t.Fatal("refused")
		}
		reserved := r.Tokens()
		if _, ok := r.Enter("openai"); !ok {
			t.Fatal("skipped")
		}
		u := Usage{Input: in, CacheRead: read, CacheWrite: write, Output: out, Known: known}
		spend := r.Finish("openai", true, u, time.Now())
		keyReads := kf == 1    // keys: false unless set
		targetReads := tf != 2 // openai: true unless set false
		wantKey, wantTarget := refCounted(in, read, write, out, keyReads), refCounted(in, read, write, out, targetReads)
		wantSpend := refSpend(in, read, write, out, pIn, pOut, pRead, pWrite)
		if !known {
			wantKey, wantTarget, wantSpend = reserved, reserved, -1
		}
		k, _ := p.RoomOf("acme", false)
		tg, _ := p.RoomOf("openai", true)
		gotKey, gotTarget := k.Limit[TokensPerDay]-k.Left[TokensPerDay], tg.Limit[TokensPerDay]-tg.Left[TokensPerDay]
		if gotKey != wantKey || gotTarget != wantTarget {
			t.Fatalf("case %d (%+v, key%q target%q): counted key %d target %d; want %d and %d", n, u, keyFlag, targetFlag, gotKey, gotTarget, wantKey, wantTarget)
		}
		switch {
		case spend == wantSpend:
			exact++
		case known && spend == wantSpend+1:
			over++
		default:
			t.Fatalf("case %d (%+v at %s): spend %d µUSD; want %d", n, u, fields, spend, wantSpend)
		}
	}
	if exact < 1600 {
		t.Fatalf("only %d of 2000 spends exact (%d one over)", exact, over)
	}
	t.Logf("%d exact, %d one micro-USD over", exact, over)
}
