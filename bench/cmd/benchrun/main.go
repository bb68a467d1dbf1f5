// Command benchrun reproduces every figure in bench/RESULTS.md (it is what
// `make bench` runs). It builds switchyard, the mock upstream and the bare
// proxy into a temporary directory, starts each as a separate process, and
// measures the same way, in one run:
//
//   - request/response throughput and latency at fixed concurrency: direct to
//     the mock, through the bare proxy, through Switchyard with 1 rule and
//     with 10,000 rules, and through Switchyard failing over (primary 503);
//   - the same for SSE streams, with the time to the first event;
//   - proxy CPU time per request (/proc/PID/stat), peak RSS (VmHWM) and
//     allocations per request (go_memstats_mallocs_total from /metrics);
//   - latency against offered open-loop load for the bare proxy and
//     Switchyard (bench/latency.svg), and p99 added at half saturation;
//   - the RSS of Switchyard holding 10,000 idle keep-alive connections,
//     split into anonymous and file-backed memory, with the Go runtime's
//     goroutine stacks, heap in use and goroutine count;
//   - CPU and allocation profiles of Switchyard (a `go build -tags pprof`
//     binary) under the 1-rule load, summarised with `go tool pprof`;
//   - bench/HISTORY.md, when it exists, appended as "Before and after".
//
// CPU placement on a 2-core machine: the proxy under test (bare proxy or
// Switchyard) runs alone on CPU 0 with GOMAXPROCS=1; the mock upstreams and
// this driver share CPU 1, each with GOMAXPROCS=1 (the latency sweep's mock
// runs inside this process, see -sweep-mock). Every proxy therefore has
// exactly one core, the same one, and its CPU-busy figure shows whether it
// was the bottleneck. Use -pin=false to let the kernel place everything.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/bench/harness"
)

type options struct {
	out, svg       string
	duration       time.Duration
	warmup         time.Duration
	conns          int
	sweepStep      time.Duration
	idleConns      int
	rules          int
	switchyard     string
	pin            bool
	streamEvents   int
	only           string
	streamInterval time.Duration
	microBenchtime string
	sweepMock      string
	profileSeconds int
	profileDir     string
	history        string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "bench/RESULTS.md", "results file (Markdown); empty: do not write")
	flag.StringVar(&o.svg, "svg", "bench/latency.svg", "latency chart (SVG); empty: do not write")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "measured time per scenario")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured warm-up per scenario")
	flag.IntVar(&o.conns, "conns", 64, "concurrent connections of the closed-loop runs")
	flag.DurationVar(&o.sweepStep, "sweep-step", 3*time.Second, "measured time per offered-load step")
	flag.IntVar(&o.idleConns, "idle-conns", 10000, "idle keep-alive connections to hold (0: skip)")
	flag.IntVar(&o.rules, "rules", 10000, "rules in the large-config scenario")
	flag.StringVar(&o.switchyard, "switchyard", "", "prebuilt switchyard binary (default: go build the module root)")
	flag.BoolVar(&o.pin, "pin", true, "pin the proxy to CPU 0 and the mock and driver to CPU 1 (needs 2+ CPUs)")
	flag.IntVar(&o.streamEvents, "stream-events", 20, "SSE events per stream")
	flag.DurationVar(&o.streamInterval, "stream-interval", 0, "pause between SSE events at the mock")
	flag.StringVar(&o.microBenchtime, "micro-benchtime", "300ms", "-benchtime of the in-process micro-benchmarks (router, peek, walk, translation); empty: skip them")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 8, "length of the CPU profile of Switchyard under load, in whole seconds (the allocation window is half of it); 0: no Profiles section")
	flag.StringVar(&o.profileDir, "profile-dir", "", "where to keep the raw profiles (default: a new directory under the system temp dir, logged)")
	flag.StringVar(&o.history, "history", "bench/HISTORY.md", "hand-written before/after notes appended verbatim as \"## Before and after\" when the file exists")
	flag.StringVar(&o.sweepMock, "sweep-mock", "inprocess", "upstream of the latency sweep: inprocess (a mock inside this driver process) or process (the mock upstream process the other rows use)")
	flag.StringVar(&o.only, "only", "", "run only this scenario group: sizes (body sizes), streams (long-lived streams) or profile; default all")
	flag.Parse()
	if o.sweepMock != "inprocess" && o.sweepMock != "process" {
		fmt.Fprintln(os.Stderr, "-sweep-mock must be inprocess or process")
		os.Exit(2)
	}

	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05"}).With().Timestamp().Logger()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error().Err(err).Msg("benchmark failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, log zerolog.Logger) error {
	start := time.Now()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "switchyard-bench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	b := &bench{o: o, log: log, tmp: tmp, ctx: ctx}
	b.rep.Machine = machine(start)
	b.rep.Command = strings.TrimSpace("go run ./bench/cmd/benchrun " + strings.Join(os.Args[1:], " "))

	log.Info().Str("dir", tmp).Msg("building binaries")
	if err := goBuild(ctx, root, filepath.Join(tmp, "bin")+"/", "./bench/cmd/mockupstream", "./bench/cmd/bareproxy"); err != nil {
		return fmt.Errorf("build bench binaries: %w", err)
	}
	b.mockBin, b.bareBin = filepath.Join(tmp, "bin", "mockupstream"), filepath.Join(tmp, "bin", "bareproxy")
	b.syBin = o.switchyard
	if b.syBin == "" {
		b.syBin = filepath.Join(tmp, "bin", "switchyard")
		if err := goBuild(ctx, root, b.syBin, "."); err != nil {
			b.syErr = "switchyard does not build: " + firstLine(err.Error())
			log.Warn().Err(err).Msg("switchyard does not build; its scenarios are skipped")
		}
	}
	if o.profileSeconds > 0 {
		// The Profiles section's binary: the same source with pprof.go
		// compiled in. Only the profiling runs use it.
		if err := goBuildTags(ctx, root, "pprof", filepath.Join(tmp, "bin", profileBinName), "."); err != nil {
			b.pprofErr = "switchyard does not build with -tags pprof: " + firstLine(err.Error())
			log.Warn().Err(err).Msg("pprof build failed; no Profiles section")
		}
	}

	limit, err := harness.RaiseFileLimit()
	if err != nil {
		log.Warn().Err(err).Msg("cannot raise RLIMIT_NOFILE")
	}
	b.fileLimit = limit
	b.setupPinning()

	if err := b.startMocks(); err != nil {
		return err
	}
	defer b.stopMocks()
	b.describe()

	switch o.only {
	case "sizes":
		b.bodySizes()
	case "streams":
		b.longStreams()
	case "profile":
		b.profile(root)
	default:
		b.scenarios()
		b.sweep()
		b.idle()
		b.profile(root)
	}
	b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("Whole run took %s.", time.Since(start).Round(time.Second)))
	if busy, at := busyMachine(b.rep.Machine.LoadAvg); busy {
		b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("Other processes were running: 1-minute load average %s before the run on %d cores. Treat tail latencies (and the pass/miss lines) as noisy; rerun on an idle machine.",
			at, b.rep.Machine.Cores))
	}

	fmt.Println()
	fmt.Print(b.rep.Tables())
	svg := ""
	if o.svg != "" {
		svg = filepath.Base(o.svg)
		if chart := b.rep.SVG(); chart != "" {
			if err := os.WriteFile(inRoot(root, o.svg), []byte(chart), 0o644); err != nil {
				return err
			}
		}
	}
	if o.history != "" {
		h, err := harness.LoadHistory(inRoot(root, o.history))
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		b.rep.History = h
	}
	md := b.rep.Markdown(svg)
	if o.microBenchtime != "" {
		// The micro-benchmarks run after the processes above have stopped,
		// so they have the machine to themselves.
		log.Info().Msg("running micro-benchmarks")
		micro, err := runMicro(ctx, root, o.microBenchtime)
		if err != nil {
			return err
		}
		fmt.Print(micro)
		md = strings.Replace(md, microPlaceholder, micro, 1)
	}
	if o.out != "" {
		if err := os.WriteFile(inRoot(root, o.out), []byte(md), 0o644); err != nil {
			return err
		}
		log.Info().Str("file", o.out).Msg("results written")
	}
	return ctx.Err()
}

// setupPinning places the driver on CPU 1 and records where the rest go.
func (b *bench) setupPinning() {
	runtime.GOMAXPROCS(1)
	method := &b.rep.Method
	allowed, err := harness.AllowedCPUs()
	if err != nil {
		b.log.Warn().Err(err).Msg("cannot read CPU affinity; running unpinned")
	}
	if b.o.pin && len(allowed) >= 2 {
		if err := harness.PinSelf(allowed[1:2]); err != nil {
			b.log.Warn().Err(err).Msg("cannot pin; running unpinned")
		} else {
			b.proxyCPUs, b.sideCPUs = allowed[0:1], allowed[1:2]
			*method = append(*method, fmt.Sprintf("Placement: the proxy under test (bare proxy or Switchyard) alone on CPU %d with GOMAXPROCS=1; mock upstreams and the load driver on CPU %d, each GOMAXPROCS=1 (sched_setaffinity).", b.proxyCPUs[0], b.sideCPUs[0])+" Every proxy gets the same single core; \"proxy CPU busy\" near 100% means the proxy was the bottleneck, lower means the driver/mock side was.")
		}
	}
	if b.proxyCPUs == nil {
		*method = append(*method, "Placement: unpinned; every process GOMAXPROCS=1, the kernel schedules them.")
	}
}

// describe records how the run was set up.
func (b *bench) describe() {
	method := &b.rep.Method
	*method = append(*method,
		fmt.Sprintf("Closed loop: %d keep-alive connections; every row has its own proxy process (so peak RSS is its own), warmed up for %v, then measured for %v in total as %d slices taken in alternation with the other rows of its group (request/response, failover, streaming), so background load on the machine falls on all rows alike.", b.o.conns, b.o.warmup, b.o.duration, rounds),
		fmt.Sprintf("Request: POST /v1/chat/completions with a %d-byte body, model \"bench-model\"; the mock answers a %d-byte chat.completion at once. Switchyard: access log off, log level warn (the bare proxy logs nothing either).", len(chatBody), b.respBytes),
		fmt.Sprintf("Streams: %d chat.completion.chunk events then data: [DONE], %s at the mock; \"first event\" is the time from sending the request to the first body byte.", b.o.streamEvents, spacing(b.o.streamInterval)),
		fmt.Sprintf("10,000 rules: %d `key: model` rules; the request matches the last one.", b.o.rules),
		"Failover: chain [primary, secondary]; primary answers 503 to everything. \"every request\" sets failure_threshold very high so each request really tries primary first; \"circuit open\" keeps the default breaker (opens after 5 failures, stays open 30 s), so primary is skipped. The notes count the primary's 503s per request.",
		"Every request/response and streaming row is checked to have reached its mock exactly once per request sent (the mock's own counter, read around each slice); a mismatch is listed under Notes.",
		"CPU/req: the proxy's utime+stime (/proc/PID/stat, 10 ms ticks) over the measured run divided by requests; allocs/req: go_memstats_mallocs_total from the proxy's /metrics (the bare proxy serves it on a side port).",
		fmt.Sprintf("RLIMIT_NOFILE raised in-process to %d (hard limit) with syscall.Setrlimit before starting children, so the 10,000-connection test fits.", b.fileLimit),
	)
}

// moduleRoot is the directory holding go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the switchyard module")
	}
	return filepath.Dir(mod), nil
}

func goBuild(ctx context.Context, root, out string, pkgs ...string) error {
	return goBuildTags(ctx, root, "", out, pkgs...)
}

// goBuildTags is goBuild with build tags (none when empty).
func goBuildTags(ctx context.Context, root, tags, out string, pkgs ...string) error {
	args := []string{"build"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(append(args, "-o", out), pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// inRoot resolves a relative output path against the module root.
func inRoot(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

func spacing(d time.Duration) string {
	if d <= 0 {
		return "back to back"
	}
	return d.String() + " apart"
}
