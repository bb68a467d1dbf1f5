package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/harness"
	"github.com/switchyard/switchyard/bench/load"
)

// pairSlices is how many CPU profiles each proxy of the side-by-side
// comparison gets, in alternation; they are merged by go tool pprof.
const pairSlices = 2

// pairBodySize is the request body of the side-by-side comparison: the
// smallest body-size row, whose unpinned gap it explains.
const pairBodySize = 1 << 10

// pairSide is one proxy of the side-by-side comparison.
type pairSide struct {
	name     string
	pp       *harness.ProxyProfile
	bin      string
	p        *proxy
	pprofURL string
	files    []string
}

// profilePair profiles the bare proxy and the 1-rule Switchyard side by
// side where the gap is widest: unpinned at the default GOMAXPROCS (the
// placement of the unpinned rows), under the 1 KB body row's closed-loop
// load. Each proxy gets pairSlices CPU profiles of profileSeconds/pairSlices
// s, the two alternating so background load falls on both alike; the
// mock's counter is read around each. It fills prof.Pair.
func (b *bench) profilePair(root, dir string, prof *harness.Profile) {
	sec := max(1, b.o.profileSeconds/pairSlices)
	pair := &harness.ProfilePair{
		Title:      fmt.Sprintf("CPU side by side: bare proxy and Switchyard, unpinned, %s body", sizeName(pairBodySize)),
		Bare:       harness.ProxyProfile{Handler: harness.BareHandlerFunc, Upstream: harness.BareUpstreamFunc},
		Switchyard: harness.ProxyProfile{Handler: harness.HandlerFunc, Upstream: harness.UpstreamFunc},
	}
	prof.Pair = pair
	if b.pprofErr != "" {
		pair.Err = b.pprofErr
		return
	}
	if b.ctx.Err() != nil {
		pair.Err = "interrupted"
		return
	}
	pair.Setup = fmt.Sprintf("Where the unpinned %[1]s rows differ, profiled: the bare proxy (with `-pprof ADDR`, net/http/pprof on a listener of its own) and Switchyard with the 1-rule config (the pprof build above), both placed like the unpinned rows: no CPU affinity and the default GOMAXPROCS (%[2]d here), the mocks and the driver %[3]s as everywhere. "+
		"Both run under the %[1]s body row's closed-loop load (%[4]d connections, the same request and headers), after a %[5]v warm-up each. "+
		"Each gets %[6]d CPU profiles of %[7]d s (`/debug/pprof/profile?seconds=%[7]d`), the two proxies alternating, merged by `go tool pprof -top -cum -nodefraction=0`; requests are counted by the mock upstream's own counter around each profile. "+
		"Figures are CPU time per request in µs (one core busy for 1 s is 10⁶ µs); the difference is Switchyard minus the bare proxy. "+
		"The rows below the whole process are parts of it, except system calls, which are spread across them. "+
		"The pprof HTTP handlers run inside the processes, so their own CPU is in the whole-process figure of both.",
		sizeName(pairBodySize), runtime.NumCPU(), cpusLabel(b.sideCPUs), b.o.conns, b.o.warmup, pairSlices, sec)

	b.unpinned = true
	defer func() { b.unpinned = false }()
	sides := []*pairSide{
		{name: "bare", pp: &pair.Bare, bin: b.bareBin},
		{name: "switchyard", pp: &pair.Switchyard, bin: filepath.Join(b.tmp, "bin", profileBinName)},
	}
	var err error
	if sides[0].p, sides[0].pprofURL, err = b.startBarePprof(); err != nil {
		pair.Err = "bare proxy: " + firstLine(err.Error())
		return
	}
	defer sides[0].p.stop()
	if sides[1].p, sides[1].pprofURL, err = b.startSwitchyardPprof(); err != nil {
		pair.Err = "switchyard: " + firstLine(err.Error())
		return
	}
	defer sides[1].p.stop()

	body := chatBodyOfSize(pairBodySize)
	cfgOf := func(s *pairSide) load.Config {
		return load.Config{URL: "http://" + s.p.addr + chatPath, Body: body, Headers: authHeader, Connections: b.o.conns, Timeout: 30 * time.Second}
	}
	for _, s := range sides {
		if err := b.warmUp(cfgOf(s)); err != nil {
			pair.Err = s.name + ": " + firstLine(err.Error())
			return
		}
	}
	for r := range pairSlices {
		order := slices.Clone(sides)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			file := filepath.Join(dir, fmt.Sprintf("pair-%s-%d.pb.gz", s.name, r))
			n, res, err := b.loadDuring(cfgOf(s), func() (int64, error) {
				n0, err := b.upstreamRequests()
				if err != nil {
					return 0, err
				}
				if err := fetch(b.ctx, s.pprofURL+fmt.Sprintf("/profile?seconds=%d", sec), file, time.Duration(sec)*time.Second); err != nil {
					return 0, err
				}
				n1, err := b.upstreamRequests()
				return n1 - n0, err
			})
			if err != nil {
				pair.Err = s.name + " profile: " + firstLine(err.Error())
				return
			}
			if err := loadErrors(res); err != nil {
				// A handful of failed requests (a connect that timed out
				// while the load's connections opened) does not change a
				// per-request figure; it is said, not hidden.
				pair.Notes = append(pair.Notes, fmt.Sprintf("%s, slice %d of %d: %s (the request counts are the mock's, so only answered requests count).", s.name, r+1, pairSlices, firstLine(err.Error())))
			}
			s.pp.Requests += n
			s.files = append(s.files, file)
		}
	}

	for _, s := range sides {
		args := append([]string{"-top", "-cum", "-nodefraction=0", s.bin}, s.files...)
		text, err := pprofText(b.ctx, root, args...)
		if err == nil {
			s.pp.CPU, err = harness.ParsePprofTop(text)
		}
		if err == nil && s.name == "switchyard" {
			focus, ignore := s.pp.OwnFilter()
			args := append([]string{"-top", "-cum", "-nodefraction=0", "-focus=" + focus, "-ignore=" + ignore, s.bin}, s.files...)
			text, err = pprofText(b.ctx, root, args...)
			if err == nil {
				s.pp.Own, err = harness.ParsePprofTop(text)
			}
		}
		if err != nil {
			pair.Notes = append(pair.Notes, s.name+" profile not read: "+firstLine(err.Error()))
		}
	}
	for _, s := range sides {
		d := s.pp.Breakdown()
		n := float64(max(1, s.pp.Requests))
		b.log.Info().Str("proxy", s.name).Int64("requests", s.pp.Requests).
			Str("cpu_per_request", fmt.Sprintf("%.2fµs", d.Whole.Sec/n*1e6)).
			Str("own_per_request", fmt.Sprintf("%.2fµs", d.Own.Sec/n*1e6)).
			Msg("side-by-side CPU profile (unpinned, " + sizeName(pairBodySize) + " body)")
	}
}

// startBarePprof starts a bare proxy to the primary mock with its pprof
// listener on a free port; it returns the pprof base URL.
func (b *bench) startBarePprof() (*proxy, string, error) {
	var paddr string
	p, err := retry(func() (*proxy, error) {
		var err error
		if paddr, err = freeAddr(); err != nil {
			return nil, err
		}
		return b.startBareOnce(b.primary.Addr, "-pprof", paddr)
	})
	if err != nil {
		return nil, "", err
	}
	url, err := b.pprofReady(p, paddr)
	if err != nil {
		p.stop()
		return nil, "", err
	}
	return p, url, nil
}

// startSwitchyardPprof starts the pprof build of Switchyard with the
// 1-rule config; it returns the pprof base URL.
func (b *bench) startSwitchyardPprof() (*proxy, string, error) {
	paddr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	gp := gwProc{bin: filepath.Join(b.tmp, "bin", profileBinName), env: []string{"SWITCHYARD_PPROF_LISTEN=" + paddr}}
	p, err := b.startSwitchyardProc(gp, "pair-1-rule", false, []gwTarget{{name: "primary", baseURL: b.mockURL(b.primary)}}, oneRuleRules)
	if err != nil {
		return nil, "", err
	}
	url, err := b.pprofReady(p, paddr)
	if err != nil {
		p.stop()
		return nil, "", err
	}
	return p, url, nil
}

// warmUp runs cfg's load for the warm-up time; an error when no request
// completed.
func (b *bench) warmUp(cfg load.Config) error {
	cfg.Duration = b.o.warmup
	res, err := load.Run(b.ctx, cfg)
	if err == nil && res.Completed > 0 {
		return nil
	}
	why := "no request completed"
	if err != nil {
		why = err.Error()
	} else if res.FirstError != "" {
		why = res.FirstError
	}
	return fmt.Errorf("warm-up failed: %s", why)
}

// loadDuring runs cfg's closed-loop load while during runs (after 500 ms
// for the connections to open and settle) and returns during's count and
// the load's result (nil if the load did not run).
func (b *bench) loadDuring(cfg load.Config, during func() (int64, error)) (int64, *load.Result, error) {
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan *load.Result, 1)
	cfg.Duration = time.Hour // ended by cancel
	go func() {
		res, _ := load.Run(ctx, cfg)
		done <- res
	}()
	time.Sleep(500 * time.Millisecond) // connections open, steady state
	n, err := during()
	cancel()
	res := <-done
	return n, res, err
}

// loadErrors is an error for a load result with errors, nil without.
func loadErrors(res *load.Result) error {
	if res != nil && res.Errors > 0 {
		return fmt.Errorf("%d load errors during the profile: %s", res.Errors, strings.TrimSpace(res.FirstError))
	}
	return nil
}
