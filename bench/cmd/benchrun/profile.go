package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/harness"
	"github.com/switchyard/switchyard/bench/load"
)

// profileBinName is the pprof build of switchyard inside the temp dir.
const profileBinName = "switchyard-pprof"

// profile runs the pprof build of Switchyard (go build -tags pprof; see
// /pprof.go) with the 1-rule config, pinned like every Switchyard row,
// under the 1-rule row's closed-loop load, and fills b.rep.Profile:
//
//   - CPU: /debug/pprof/profile?seconds=N in one process;
//   - allocations: a second process started with GODEBUG=memprofilerate=1
//     (every allocation recorded), between two /debug/pprof/heap?gc=1
//     snapshots N/2 s apart, diffed with -base. Each snapshot forces a GC,
//     which publishes the allocation records up to that moment, so the
//     window is exact. (/debug/pprof/allocs?seconds=N is a delta too, but
//     between the last GCs before its two ends, which in a process that
//     allocates little can be long before the window.)
//
// Requests are counted by the mock upstream's own counter around each
// window. The raw profiles are kept in b.o.profileDir (default: a new
// directory under the system temp dir), whose path is logged.
func (b *bench) profile(root string) {
	sec := b.o.profileSeconds
	if sec <= 0 || b.ctx.Err() != nil {
		return
	}
	prof := &harness.Profile{}
	b.rep.Profile = prof
	if b.pprofErr != "" {
		prof.Err = b.pprofErr
		prof.Pair = &harness.ProfilePair{Title: "CPU side by side", Err: b.pprofErr}
		return
	}
	dir := b.o.profileDir
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "switchyard-profiles-*")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		prof.Err = "profile directory: " + firstLine(err.Error())
		return
	}
	// The side-by-side comparison of the bare proxy and Switchyard comes
	// last, after the log line naming dir.
	defer b.profilePair(root, dir, prof)
	allocSec := max(1, sec/2)
	prof.Setup = fmt.Sprintf("Switchyard with the 1-rule config, built with `go build -tags pprof` (pprof.go serves net/http/pprof on `$SWITCHYARD_PPROF_LISTEN`; every measured row above uses the normal build), %s with GOMAXPROCS=1 like the other Switchyard rows, under the 1-rule row's closed-loop load (%d connections, the same request), after a %v warm-up. "+
		"CPU: `/debug/pprof/profile?seconds=%d` (%d s). "+
		"Allocations: a second process, started with `GODEBUG=memprofilerate=1` so that every allocation is recorded (the default records about one per 512 KiB allocated, too coarse for a few allocations per request), under the same load; the window is the %d s between two `/debug/pprof/heap?gc=1` snapshots, diffed with `-base`. "+
		"Each snapshot forces a GC, which publishes the allocation records up to that moment; `/debug/pprof/allocs?seconds=N` is a delta too on this Go version, but between the last GCs before its two ends, which in a process that allocates little can lie seconds before the window. "+
		"Requests are counted by the mock upstream's own counter, read around each window. The pprof HTTP handler runs inside the process, so its own CPU and allocations are in the profiles.",
		cpusLabel(b.proxyCPUs), b.o.conns, b.o.warmup, sec, sec, allocSec)
	prof.Commands = profileCommands(sec, allocSec)

	cpuFile := filepath.Join(dir, "cpu.pb.gz")
	heap0, heap1 := filepath.Join(dir, "heap-0.pb.gz"), filepath.Join(dir, "heap-1.pb.gz")
	var cpuErr, allocErr error
	prof.CPURequests, cpuErr = b.underLoad("profile-cpu", nil, func(pprofURL string) (int64, error) {
		n0, err := b.upstreamRequests()
		if err != nil {
			return 0, err
		}
		if err := fetch(b.ctx, pprofURL+fmt.Sprintf("/profile?seconds=%d", sec), cpuFile, time.Duration(sec)*time.Second); err != nil {
			return 0, err
		}
		n1, err := b.upstreamRequests()
		return n1 - n0, err
	})
	if cpuErr != nil {
		prof.Notes = append(prof.Notes, "CPU profile not taken: "+firstLine(cpuErr.Error()))
	}
	godebug := "memprofilerate=1"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	prof.AllocRequests, allocErr = b.underLoad("profile-allocs", []string{"GODEBUG=" + godebug}, func(pprofURL string) (int64, error) {
		if err := fetch(b.ctx, pprofURL+"/heap?gc=1", heap0, 0); err != nil {
			return 0, err
		}
		n0, err := b.upstreamRequests()
		if err != nil {
			return 0, err
		}
		select {
		case <-time.After(time.Duration(allocSec) * time.Second):
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
		n1, err := b.upstreamRequests()
		if err != nil {
			return 0, err
		}
		return n1 - n0, fetch(b.ctx, pprofURL+"/heap?gc=1", heap1, 0)
	})
	if allocErr != nil {
		prof.Notes = append(prof.Notes, "Allocation profile not taken: "+firstLine(allocErr.Error()))
	}
	b.log.Info().Str("dir", dir).Msg("raw profiles kept (symbolized; go tool pprof reads them without the binary)")

	bin := filepath.Join(b.tmp, "bin", profileBinName)
	if cpuErr == nil {
		text, err := pprofText(b.ctx, root, "-top", "-cum", "-nodefraction=0", bin, cpuFile)
		if err == nil {
			prof.CPU, err = harness.ParsePprofTop(text)
		}
		if err != nil {
			prof.Notes = append(prof.Notes, "CPU profile not read: "+firstLine(err.Error()))
		}
	}
	if allocErr == nil {
		base := []string{"-sample_index=alloc_objects", "-top", "-base", heap0}
		text, err := pprofText(b.ctx, root, append(base, "-nodefraction=0", bin, heap1)...)
		if err == nil {
			prof.Allocs, err = harness.ParsePprofTop(text)
		}
		if err == nil {
			text, err = pprofText(b.ctx, root, append(base, "-nodefraction=0", "-focus="+harness.SwitchyardFocus, bin, heap1)...)
		}
		if err == nil {
			prof.AllocsFocus, err = harness.ParsePprofTop(text)
		}
		if err == nil {
			text, err = pprofText(b.ctx, root, append(base, "-nodefraction=0", "-focus="+harness.ProfilerFocus, bin, heap1)...)
		}
		if err == nil {
			prof.AllocsProfiler, err = harness.ParsePprofTop(text)
		}
		if err == nil {
			text, err = pprofText(b.ctx, root, append(base, "-nodecount=12", bin, heap1)...)
			prof.AllocsText = stripPprofHeader(text)
		}
		if err == nil {
			text, err = pprofText(b.ctx, root, append(base, "-nodecount=12", "-focus="+harness.SwitchyardFocus, bin, heap1)...)
			prof.AllocsFocusText = stripPprofHeader(text)
		}
		if err != nil {
			prof.Allocs, prof.AllocsFocus, prof.AllocsProfiler = nil, nil, nil
			prof.Notes = append(prof.Notes, "Allocation profile not read: "+firstLine(err.Error()))
		}
	}
	if prof.CPU != nil {
		ev := b.log.Info().Int64("requests", prof.CPURequests).Str("process_cpu", fmt.Sprintf("%.2fs", prof.CPU.Total))
		if own, ok := prof.OwnCPU(); ok {
			ev = ev.Str("own_cpu", fmt.Sprintf("%.2fs", own))
		}
		ev.Msg("CPU profile")
	}
	if prof.Allocs != nil && prof.AllocsFocus != nil {
		b.log.Info().Int64("requests", prof.AllocRequests).Float64("allocs", prof.Allocs.Total).
			Float64("switchyard_allocs", prof.AllocsFocus.Shown).Msg("allocation profile")
	}
}

// underLoad starts the pprof build of Switchyard (1 rule, extra env),
// warms it up, then runs the 1-rule row's closed-loop load while during
// runs; during gets the pprof base URL (http://ADDR/debug/pprof) and
// returns the request count it wants recorded.
func (b *bench) underLoad(name string, env []string, during func(pprofURL string) (int64, error)) (int64, error) {
	paddr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	gp := gwProc{bin: filepath.Join(b.tmp, "bin", profileBinName), env: append([]string{"SWITCHYARD_PPROF_LISTEN=" + paddr}, env...)}
	p, err := b.startSwitchyardProc(gp, name, false, []gwTarget{{name: "primary", baseURL: b.mockURL(b.primary)}}, oneRuleRules)
	if err != nil {
		return 0, err
	}
	defer p.stop()
	pprofURL, err := b.pprofReady(p, paddr)
	if err != nil {
		return 0, err
	}
	cfg := load.Config{URL: "http://" + p.addr + chatPath, Body: chatBody, Headers: authHeader, Connections: b.o.conns, Timeout: 30 * time.Second}
	if err := b.warmUp(cfg); err != nil {
		return 0, err
	}
	n, res, err := b.loadDuring(cfg, func() (int64, error) { return during(pprofURL) })
	if err != nil {
		return 0, err
	}
	return n, loadErrors(res)
}

// pprofReady waits for p's pprof listener on paddr and returns its base
// URL (http://ADDR/debug/pprof).
func (b *bench) pprofReady(p *proxy, paddr string) (string, error) {
	url := "http://" + paddr + "/debug/pprof"
	if err := waitHTTP(b.ctx, url+"/", p.proc, 10*time.Second); err != nil {
		return "", fmt.Errorf("pprof listener: %w", err)
	}
	return url, nil
}

// upstreamRequests is the primary mock's count of requests served.
func (b *bench) upstreamRequests() (int64, error) {
	st, err := mockStats(b.primary.Addr)
	if err != nil {
		return 0, fmt.Errorf("mock request counter: %w", err)
	}
	return st.Requests, nil
}

// fetch GETs url into file; run is how long the server takes to produce
// it (a profile's seconds), added to the timeout.
func fetch(ctx context.Context, url, file string, run time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, run+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pprofText runs `go tool pprof args...` (the go command on PATH, as for
// every build here) and returns its standard output.
func pprofText(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof"}, args...)...)
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool pprof %s: %v: %s", strings.Join(args, " "), err, lastLines(stderr.String(), 3))
	}
	return string(out), nil
}

// stripPprofHeader drops the lines of a pprof listing that change with
// every run and say nothing about the profile (file, build ID, time).
func stripPprofHeader(text string) string {
	var keep []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "File: ") || strings.HasPrefix(l, "Build ID: ") || strings.HasPrefix(l, "Time: ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// profileCommands is the shell recipe reproducing the Profiles section by
// hand (the config and load of "Running the same load by hand" in
// bench/README.md).
func profileCommands(sec, allocSec int) string {
	return fmt.Sprintf(`go build -tags pprof -o /tmp/switchyard-pprof .
# /tmp/bench.yaml and the mock on 127.0.0.1:9001: see "Running the same load by hand" in bench/README.md
SWITCHYARD_PPROF_LISTEN=127.0.0.1:6060 GOMAXPROCS=1 taskset -c 0 /tmp/switchyard-pprof serve -config /tmp/bench.yaml &
taskset -c 1 /tmp/loadgen -url http://127.0.0.1:8080/v1/chat/completions -body @bench/chat.json -c 64 -d %[3]ds &
sleep 2; curl -s -o cpu.pb.gz 'http://127.0.0.1:6060/debug/pprof/profile?seconds=%[1]d'
go tool pprof -top -cum /tmp/switchyard-pprof cpu.pb.gz
# allocations: restart the gateway recording every allocation, same load
GODEBUG=memprofilerate=1 SWITCHYARD_PPROF_LISTEN=127.0.0.1:6060 GOMAXPROCS=1 taskset -c 0 /tmp/switchyard-pprof serve -config /tmp/bench.yaml &
taskset -c 1 /tmp/loadgen -url http://127.0.0.1:8080/v1/chat/completions -body @bench/chat.json -c 64 -d %[4]ds &
sleep 2; curl -s -o heap-0.pb.gz 'http://127.0.0.1:6060/debug/pprof/heap?gc=1'
sleep %[2]d; curl -s -o heap-1.pb.gz 'http://127.0.0.1:6060/debug/pprof/heap?gc=1'
go tool pprof -sample_index=alloc_objects -top -base heap-0.pb.gz /tmp/switchyard-pprof heap-1.pb.gz
go tool pprof -sample_index=alloc_objects -top -focus='%[5]s' -base heap-0.pb.gz /tmp/switchyard-pprof heap-1.pb.gz`,
		sec, allocSec, sec+4, allocSec+4, harness.SwitchyardFocus)
}

func cpusLabel(cpus []int) string {
	if len(cpus) == 0 {
		return "unpinned"
	}
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = fmt.Sprint(c)
	}
	return "pinned to CPU " + strings.Join(s, ",")
}
