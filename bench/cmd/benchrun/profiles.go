package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/switchyard/switchyard/bench/load"
)

// profiles saves a CPU profile and a one-second execution trace of the bare
// proxy and of Switchyard (a `go build -tags pprof` binary, which serves
// net/http/pprof on $SWITCHYARD_PPROF_LISTEN) under the unpinned 74-byte
// load, and prints the `go tool pprof` and `go tool trace` commands that
// read them, with the requests each window served.
func (b *bench) profiles(root string) {
	sec := b.o.profileSeconds
	if sec <= 0 || b.ctx.Err() != nil {
		return
	}
	dir, err := b.o.profileDir, error(nil)
	if dir == "" {
		dir, err = os.MkdirTemp("", "switchyard-profiles-*")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		b.rep.Notes = append(b.rep.Notes, "No profiles: "+err.Error())
		return
	}
	syPprof := filepath.Join(b.tmp, "bin", "switchyard-pprof")
	if err := goBuildTags(b.ctx, root, "pprof", syPprof, "."); err != nil {
		b.rep.Notes = append(b.rep.Notes, "No profiles: switchyard does not build with -tags pprof: "+firstLine(err.Error()))
		return
	}
	b.unpinned = true
	defer func() { b.unpinned = false }()
	var sec2 string
	for _, name := range []string{"bare", "switchyard"} {
		paddr, err := freeAddr()
		if err != nil {
			continue
		}
		var p *proxy
		if name == "bare" {
			p, err = b.startBare(b.primary.Addr, "-pprof", paddr)
		} else {
			p, err = b.startSwitchyardProc(gwProc{bin: syPprof, env: []string{"SWITCHYARD_PPROF_LISTEN=" + paddr}}, "profile", false,
				[]gwTarget{{name: "primary", baseURL: b.mockURL(b.primary)}}, oneRuleRules)
		}
		if err != nil {
			b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("No %s profile: %s", name, firstLine(err.Error())))
			continue
		}
		cpu, trace := filepath.Join(dir, name+".cpu.pprof"), filepath.Join(dir, name+".trace")
		nCPU, err1 := b.underLoad(p, func() error {
			return save(b.ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", paddr, sec), cpu)
		})
		nTrace, err2 := b.underLoad(p, func() error {
			return save(b.ctx, "http://"+paddr+"/debug/pprof/trace?seconds=1", trace)
		})
		p.stop()
		if err := firstErr(err1, err2); err != nil {
			b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("No %s profile: %s", name, firstLine(err.Error())))
			continue
		}
		sec2 += fmt.Sprintf("- %s: `%s` (%d requests in %d s), `%s` (%d requests in 1 s)\n", name, cpu, nCPU, sec, trace, nTrace)
	}
	if sec2 == "" {
		return
	}
	b.log.Info().Str("dir", dir).Msg("profiles saved")
	b.rep.Sections = append(b.rep.Sections, "## Profiles\n\nBoth proxies unpinned at their default GOMAXPROCS under the 74-byte closed-loop load (CPU profile, then a 1 s execution trace); divide by the requests to get per-request figures. Saved (not committed):\n\n"+sec2+
		fmt.Sprintf("\n```sh\ngo tool pprof -top -diff_base %[1]s/bare.cpu.pprof %[1]s/switchyard.cpu.pprof   # where Switchyard spends more\ngo tool pprof -http=: %[1]s/switchyard.cpu.pprof\ngo tool trace %[1]s/switchyard.trace   # goroutine wake-ups, P hand-offs\n```\n\n", dir))
}

// underLoad runs during while p serves the 74-byte closed loop, and returns
// the requests the mock received meanwhile.
func (b *bench) underLoad(p *proxy, during func() error) (int64, error) {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	cfg := load.Config{URL: "http://" + p.addr + chatPath, Body: chatBody, Headers: authHeader, Connections: b.o.conns, Duration: time.Hour}
	warm := cfg
	warm.Duration = b.o.warmup
	if _, err := load.Run(b.ctx, warm); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	go func() { defer close(done); _, _ = load.Run(ctx, cfg) }()
	defer func() { cancel(); <-done }()
	st0, err := mockStats(b.primary.Addr)
	if err != nil {
		return 0, err
	}
	if err := during(); err != nil {
		return 0, err
	}
	st1, err := mockStats(b.primary.Addr)
	return st1.Requests - st0.Requests, err
}

// save writes the body of GET url to file.
func save(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return firstErr(err, f.Close())
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
