// Command benchrun is `make bench`: it builds switchyard, the mock upstream
// and the bare proxy, runs each as its own process, measures the rows
// bench/README.md lists and writes bench/RESULTS.md.
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
)

type options struct {
	out, switchyard, only       string
	rows, keepCallgrind         string
	instrKB                     string
	duration, warmup, sweepStep time.Duration
	conns, idleConns, rules     int
	profileSeconds              int
	pin                         bool
}

// bench is the state of one run. Not safe for concurrent use.
type bench struct {
	o   options
	log zerolog.Logger
	tmp string
	ctx context.Context

	mockBin, bareBin, syBin string
	syErr                   string // why the Switchyard rows are skipped
	configs                 int    // Switchyard configs written
	proxyCPUs, sideCPUs     []int
	allCPUs                 []int // the driver's before it pinned itself: an unpinned proxy's (see place)
	unpinned                bool  // start proxies as users deploy them (see place)

	primary, secondary, streamer *proc
	respBytes                    int

	rows     []*row
	direct   *row                     // "direct to mock": what "added" subtracts
	p99Half  map[string]time.Duration // p99 added at half saturation, by row name
	method   []string                 // how the run was set up, one bullet each
	sections []string                 // Markdown sections after the targets
	notes    []string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "bench/RESULTS.md", "results file (Markdown); empty: do not write")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "measured time per row")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured warm-up per row")
	flag.IntVar(&o.conns, "conns", 64, "connections of the closed-loop runs")
	flag.DurationVar(&o.sweepStep, "sweep-step", 3*time.Second, "measured time per offered-load step and proxy")
	flag.IntVar(&o.idleConns, "idle-conns", 10000, "idle keep-alive connections to hold (0: skip)")
	flag.IntVar(&o.rules, "rules", 10000, "rules in the large-config row")
	flag.StringVar(&o.switchyard, "switchyard", "", "prebuilt switchyard binary (default: build the module root)")
	flag.BoolVar(&o.pin, "pin", true, "pin the proxy to CPU 0 and the mocks and driver to CPU 1 (needs 2+ CPUs)")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 8, "seconds of each proxy's CPU profile (0: none)")
	flag.StringVar(&o.only, "only", "", "run one group: sizes, features, streams, batches, translation, profile, instructions or sweep; default all")
	flag.StringVar(&o.rows, "rows", "", "instructions: count only the rows whose \"ROW, BODY\" matches this regexp (e.g. '1 rule, 190'); default all")
	flag.StringVar(&o.instrKB, "instr-kb", "", "instructions: more chat bodies to count, comma-separated sizes in KB (e.g. 16,128); default only 190 B and 1 KB")
	flag.StringVar(&o.keepCallgrind, "keep-callgrind", "", "instructions: copy each row's counted callgrind dump into this directory, for callgrind_annotate")
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
	began := time.Now()
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(mod)), "go.mod") {
		return fmt.Errorf("not inside the switchyard module: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(mod)))
	tmp, err := os.MkdirTemp("", "switchyard-bench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := &bench{o: o, log: log, tmp: tmp, ctx: ctx, p99Half: map[string]time.Duration{}}
	head, busy := machine(began)

	log.Info().Str("dir", tmp).Msg("building binaries")
	bin := filepath.Join(tmp, "bin")
	if err := goBuild(ctx, root, "", bin+"/", "./mock/cmd/mockupstream", "./bench/cmd/bareproxy"); err != nil {
		return err
	}
	b.mockBin, b.bareBin, b.syBin = filepath.Join(bin, "mockupstream"), filepath.Join(bin, "bareproxy"), o.switchyard
	if b.syBin == "" {
		b.syBin = filepath.Join(bin, "switchyard")
		if err := goBuild(ctx, root, "", b.syBin, "."); err != nil {
			b.syErr = "switchyard does not build: " + firstLine(err.Error())
			log.Warn().Err(err).Msg("switchyard does not build; its rows are skipped")
		}
	}
	if err := raiseFileLimit(); err != nil {
		log.Warn().Err(err).Msg("cannot raise RLIMIT_NOFILE")
	}
	b.setupPinning()
	defer func() { b.primary.stop(); b.secondary.stop(); b.streamer.stop() }()
	if err := b.startMocks(); err != nil {
		return err
	}
	b.describe()

	switch o.only {
	case "sizes":
		b.bodySizes()
		b.unpinnedRows()
	case "streams":
		b.longStreams()
	case "features":
		b.featureRows()
	case "profile":
		b.profiles(root)
	case "batches":
		b.batchUpload()
	case "instructions":
		b.instructions()
	case "sweep":
		b.sweepAlone()
	case "translation":
		b.translationRows()
	default:
		b.scenarios()
		b.sweep()
		b.idle()
		b.batchUpload()
		b.profiles(root)
		b.instructions()
	}
	b.notes = append(b.notes, fmt.Sprintf("Whole run took %s.", time.Since(began).Round(time.Second)))
	if busy != "" {
		b.notes = append(b.notes, busy)
	}
	md := b.markdown(head)
	fmt.Print("\n" + md)
	if o.out != "" {
		if !filepath.IsAbs(o.out) {
			o.out = filepath.Join(root, o.out)
		}
		if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
			return err
		}
		log.Info().Str("file", o.out).Msg("results written")
	}
	return ctx.Err()
}

// setupPinning moves this driver to CPU 1 and keeps CPU 0 for the proxies.
func (b *bench) setupPinning() {
	runtime.GOMAXPROCS(1)
	allowed, err := allowedCPUs()
	if err == nil && b.o.pin && len(allowed) >= 2 {
		if err = pinSelf(allowed[1:2]); err == nil {
			b.proxyCPUs, b.sideCPUs, b.allCPUs = allowed[0:1], allowed[1:2], allowed
			b.method = append(b.method, fmt.Sprintf("Placement: the proxy under test (bare proxy or Switchyard) alone on CPU %d with GOMAXPROCS=1; mock upstreams and the load driver on CPU %d, each GOMAXPROCS=1 (sched_setaffinity). Every proxy gets the same single core.", allowed[0], allowed[1]))
			return
		}
	}
	if err != nil {
		b.log.Warn().Err(err).Msg("cannot pin; running unpinned")
	}
	b.method = append(b.method, "Placement: unpinned; every process GOMAXPROCS=1, the kernel schedules them.")
}

func (b *bench) startMocks() error {
	var err error
	mockProc := func(name string, args ...string) *proc {
		if err != nil {
			return nil
		}
		var p *proc
		p, err = start(b.ctx, "mock "+name, b.sideCPUs, []string{"GOMAXPROCS=1"}, true, b.mockBin,
			append([]string{"-listen", "127.0.0.1:0", "-name", name}, args...)...)
		return p
	}
	b.primary, b.secondary = mockProc("primary"), mockProc("secondary")
	b.streamer = mockProc("stream", "-stream-events", strconv.Itoa(streamEvents))
	if err != nil {
		return err
	}
	var req fasthttp.Request
	var resp fasthttp.Response
	req.SetRequestURI("http://" + b.primary.addr + chatPath)
	req.Header.SetMethod("POST")
	req.SetBody(chatBody)
	if err := fasthttp.DoTimeout(&req, &resp, 5*time.Second); err != nil || resp.StatusCode() != 200 {
		return fmt.Errorf("mock does not answer: %v (status %d)", err, resp.StatusCode())
	}
	b.respBytes = len(resp.Body())
	return nil
}

// describe records how the run was set up.
func (b *bench) describe() {
	b.method = append(b.method,
		fmt.Sprintf("Closed loop: %d keep-alive connections; every row has its own proxy process (so peak RSS is its own), warmed up for %v, then measured for %v in total as %d slices taken in alternation with the other rows of its group (request/response, failover, streaming), so background load on the machine falls on all rows alike.", b.o.conns, b.o.warmup, b.o.duration, rounds),
		fmt.Sprintf("Request: POST /v1/chat/completions with a %d-byte body, model \"bench-model\"; the mock answers a %d-byte chat.completion at once. Switchyard: access log off, log level warn (the bare proxy logs nothing either).", len(chatBody), b.respBytes),
		fmt.Sprintf("Streams: %d chat.completion.chunk events then data: [DONE], back to back at the mock; \"first event\" is the time from sending the request to the first body byte.", streamEvents),
		fmt.Sprintf("10,000 rules: %d `key: model` rules; the request matches the last one.", b.o.rules),
		"Failover: chain [primary, secondary]; primary answers 503 to everything. \"every request\" sets failure_threshold very high so each request really tries primary first; \"circuit open\" keeps the default breaker (opens after 5 failures, stays open 30 s), so primary is skipped. The notes count the primary's 503s per request.",
		"Every request/response and streaming row is checked to have reached its mock exactly once per request sent (the mock's own counter, read around each slice); a mismatch is listed under Notes.",
		"CPU/req: the proxy's utime+stime (/proc/PID/stat, 10 ms ticks) over the measured run divided by requests; allocs/req: go_memstats_mallocs_total from the proxy's /metrics (the bare proxy serves it on a side port).",
		"Bare proxy (bench/bareproxy): fasthttp server and HostClient with 16 KiB read and write buffers on both sides, header names and paths passed untouched, no retries; \"stream\" decided from an Accept: text/event-stream header or the first and last 256 bytes of the body (constant time), so only SSE answers are streamed.",
		"Feature rows: the 1-rule config plus one block from the docs (client keys; a key with limits on the memory store; the same on Redis, a redis-server started on a free loopback port beside the mocks, with the Redis commands per request from INFO commandstats and redis-server's CPU per request; residency; the audit log with a fresh signing key; tracing at sample_ratio 0.01 to an in-process OTLP/HTTP sink that answers 200; the admin listener with a client polling /api/decisions once a second; the access log on, its lines to the proxy's stderr, a pipe this driver reads). A row whose config the binary refuses (`switchyard validate`) is skipped with \"config not accepted\".",
	)
}

// machine is the report's machine line and, when the 1-minute load average
// shows other work (over a quarter of the cores busy), a note saying so.
func machine(now time.Time) (head, busy string) {
	cpu, kernel, load := "unknown CPU", "", ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
			if v, err := strconv.ParseFloat(f[0], 64); err == nil && v > 0.25*float64(runtime.NumCPU()) {
				busy = fmt.Sprintf("Other processes were running: 1-minute load average %s before the run on %d cores. Treat tail latencies (and the pass/miss lines) as noisy; rerun on an idle machine.", f[0], runtime.NumCPU())
			}
		}
	}
	head = fmt.Sprintf("Produced by `make bench` (`%s`) on %s.\n\n- Machine: %s, %d cores, Linux %s, %s; load average at start: %s\n",
		strings.TrimSpace("go run ./bench/cmd/benchrun "+strings.Join(os.Args[1:], " ")), now.UTC().Format("2006-01-02 15:04 MST"),
		cpu, runtime.NumCPU(), kernel, runtime.Version(), load)
	return head, busy
}

// goBuild builds pkgs into out with the build tags (none when empty).
func goBuild(ctx context.Context, root, tags, out string, pkgs ...string) error {
	args := append([]string{"build", "-tags=" + tags, "-o", out}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
