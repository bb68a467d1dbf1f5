package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/load"
)

// profiles saves a CPU profile and a one-second execution trace of each
// proxy, unpinned under the 74-byte load, and prints the commands that read
// them. Switchyard is a `go build -tags pprof` binary, which serves
// net/http/pprof on $SWITCHYARD_PPROF_LISTEN; the bare proxy serves it
// beside its metrics.
func (b *bench) profiles(root string) {
	sec := b.o.profileSeconds
	if sec <= 0 || b.ctx.Err() != nil {
		return
	}
	dir, err := os.MkdirTemp("", "switchyard-profiles-*")
	if err == nil {
		err = goBuild(b.ctx, root, "pprof", filepath.Join(b.tmp, "switchyard-pprof"), ".")
	}
	if err != nil {
		b.notes = append(b.notes, "No profiles: "+firstLine(err.Error()))
		return
	}
	b.unpinned = true
	defer func() { b.unpinned = false }()
	var list string
	for _, name := range []string{"bare", "switchyard"} {
		paddr, err := freeAddr()
		var p *proxy
		if err == nil && name == "bare" {
			if p, err = b.bare(b.primary.addr); err == nil {
				paddr = strings.TrimSuffix(strings.TrimPrefix(p.metrics, "http://"), "/metrics")
			}
		} else if err == nil {
			sy := oneRule(b.primary.addr)
			sy.bin, sy.env = filepath.Join(b.tmp, "switchyard-pprof"), []string{"SWITCHYARD_PPROF_LISTEN=" + paddr}
			p, err = b.switchyard(sy)
		}
		cpu, trace := filepath.Join(dir, name+".cpu.pprof"), filepath.Join(dir, name+".trace")
		var nCPU, nTrace int64
		if err == nil {
			nCPU, err = b.underLoad(p, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", paddr, sec), cpu)
		}
		if err == nil {
			nTrace, err = b.underLoad(p, "http://"+paddr+"/debug/pprof/trace?seconds=1", trace)
		}
		if p != nil {
			p.stop()
		}
		if err != nil {
			b.notes = append(b.notes, fmt.Sprintf("No %s profile: %s", name, firstLine(err.Error())))
			continue
		}
		list += fmt.Sprintf("- %s: `%s` (%d requests in %d s), `%s` (%d requests in 1 s)\n", name, cpu, nCPU, sec, trace, nTrace)
	}
	if list == "" {
		return
	}
	b.log.Info().Str("dir", dir).Msg("profiles saved")
	b.sections = append(b.sections, "## Profiles\n\nBoth proxies unpinned at their default GOMAXPROCS under the 74-byte closed-loop load (CPU profile, then a 1 s execution trace); divide by the requests to get per-request figures. Saved (not committed):\n\n"+list+
		fmt.Sprintf("\n```sh\ngo tool pprof -top -diff_base %[1]s/bare.cpu.pprof %[1]s/switchyard.cpu.pprof   # where Switchyard spends more\ngo tool pprof -http=: %[1]s/switchyard.cpu.pprof\ngo tool trace %[1]s/switchyard.trace   # goroutine wake-ups, P hand-offs\n```\n\n", dir))
}

// underLoad saves GET url to file while p serves the 74-byte closed loop,
// and returns the requests the mock received meanwhile.
func (b *bench) underLoad(p *proxy, url, file string) (int64, error) {
	cfg := load.Config{URL: "http://" + p.addr + chatPath, Body: chatBody, Headers: authHeader, Connections: b.o.conns, Duration: b.o.warmup}
	if _, err := load.Run(b.ctx, cfg); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	cfg.Duration = time.Hour
	go func() { defer close(done); _, _ = load.Run(ctx, cfg) }()
	defer func() { cancel(); <-done }()
	st0, err := mockStats(b.primary.addr)
	if err != nil {
		return 0, err
	}
	req, _ := http.NewRequestWithContext(b.ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(f, resp.Body)
	if err = errors.Join(err, f.Close()); err != nil {
		return 0, err
	}
	st1, err := mockStats(b.primary.addr)
	return st1.Requests - st0.Requests, err
}
