// Command benchrun reproduces every figure in bench/RESULTS.md (it is what
// `make bench` runs): it builds switchyard, the mock upstream and the bare
// proxy, starts each as its own process, and measures throughput, latency,
// proxy CPU and allocations per request of every row (bench/README.md lists
// them), latency against offered load, and the memory of idle connections.
// It saves CPU profiles of both proxies and prints the `go tool pprof`
// commands that read them.
//
// CPU placement on 2+ cores: the proxy under test alone on CPU 0 with
// GOMAXPROCS=1, the mocks and this driver on CPU 1 (-pin=false: unpinned).
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
	out            string
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
	profileSeconds int
	profileDir     string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "bench/RESULTS.md", "results file (Markdown); empty: do not write")
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
	flag.IntVar(&o.profileSeconds, "profile-seconds", 8, "seconds of each proxy's CPU profile under load (saved, with the go tool pprof commands printed); 0: none")
	flag.StringVar(&o.profileDir, "profile-dir", "", "where to save the profiles (default: a new directory under the system temp dir)")
	flag.StringVar(&o.only, "only", "", "run only this group: sizes (body sizes, then 74 B and 1 KB unpinned), features (the feature rows), streams (long-lived streams) or profile; default all")
	flag.Parse()

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
	if err := goBuild(ctx, root, filepath.Join(tmp, "bin")+"/", "./mock/cmd/mockupstream", "./bench/cmd/bareproxy"); err != nil {
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
		b.unpinnedRows()
	case "streams":
		b.longStreams()
	case "features":
		b.rows = map[string]*harness.Row{}
		b.featureRows()
	case "profile":
		b.profiles(root)
	default:
		b.scenarios()
		b.sweep()
		b.idle()
		b.profiles(root)
	}
	b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("Whole run took %s.", time.Since(start).Round(time.Second)))
	if busy, at := busyMachine(b.rep.Machine.LoadAvg); busy {
		b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("Other processes were running: 1-minute load average %s before the run on %d cores. Treat tail latencies (and the pass/miss lines) as noisy; rerun on an idle machine.",
			at, b.rep.Machine.Cores))
	}

	fmt.Println()
	fmt.Print(b.rep.Tables())
	if o.out != "" {
		if err := os.WriteFile(inRoot(root, o.out), []byte(b.rep.Markdown()), 0o644); err != nil {
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
			b.proxyCPUs, b.sideCPUs, b.allCPUs = allowed[0:1], allowed[1:2], allowed
			*method = append(*method, fmt.Sprintf("Placement: the proxy under test (bare proxy or Switchyard) alone on CPU %d with GOMAXPROCS=1; mock upstreams and the load driver on CPU %d, each GOMAXPROCS=1 (sched_setaffinity).", b.proxyCPUs[0], b.sideCPUs[0])+" Every proxy gets the same single core.")
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
		"Bare proxy (bench/bareproxy): fasthttp server and HostClient with 16 KiB read and write buffers on both sides, header names and paths passed untouched, no retries; \"stream\" decided from an Accept: text/event-stream header or the first and last 256 bytes of the body (constant time), so only SSE answers are streamed.",
		"Feature rows: the 1-rule config plus one block from the README (client keys; a key with limits on the memory store; the same on Redis, a redis-server started on a free loopback port beside the mocks, with the Redis commands per request from INFO commandstats; residency; the audit log with a key from `switchyard audit keygen`; tracing at sample_ratio 0.01 to an in-process OTLP/HTTP sink that answers 200; the admin listener with a client polling /api/decisions once a second). A row whose config the binary refuses (`switchyard validate`) is skipped with \"config not accepted\".",
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
	args := append([]string{"build", "-tags=" + tags, "-o", out}, pkgs...)
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
