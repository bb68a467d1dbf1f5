package main

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/load"
)

// Instruction counts: wall-clock CPU per request on a shared 2-core VM
// moves by ±15% between runs, too much to guide a 10% hunt. Valgrind's
// callgrind counts the instructions a process executes whatever else the
// machine does, so the same workload gives the same count run after run.
// Each proxy runs under callgrind (GODEBUG=asyncpreemptoff=1: Go's
// preemption signals and valgrind's do not mix); after a warm-up the counts
// are dumped and reset (callgrind_control -d, through valgrind's command
// file, not a signal), then a fixed number of requests runs and the counts
// are dumped again: that second dump divided by the requests is the
// instructions per request, by function. User-space only: system calls
// cost what they cost in the kernel, for both proxies alike.

// instrBody190 is a small chat request of 190 bytes, the size of a short
// prompt with a system message.
var instrBody190 = []byte(`{"model":"bench-model","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about routing requests"}],"max_tokens":64}`)

const (
	instrWarmup   = 3000
	instrRequests = 20000
	instrConns    = 8
)

// instrRow is one proxy's count on one body.
type instrRow struct {
	name  string
	body  string
	total float64            // instructions per request
	fns   map[string]float64 // by function, per request
	err   error
}

// instructions measures the bare proxy and Switchyard (one rule, one rule
// with client keys, and one rule with the access log on as shipped, its
// lines to a pipe the driver reads) on the 190-byte and 1 KB bodies.
func (b *bench) instructions() {
	if _, err := exec.LookPath("valgrind"); err != nil {
		b.sections = append(b.sections, "## Instructions per request\n\nskipped: valgrind is not installed (Debian package `valgrind`).\n")
		return
	}
	type body struct {
		name string
		b    []byte
	}
	bodies := []body{{"190 B", instrBody190}, {"1 KB", chatBodyOfSize(1 << 10)}}
	for _, kb := range strings.Split(b.o.instrKB, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(kb)); err == nil && n > 0 {
			bodies = append(bodies, body{kb + " KB", chatBodyOfSize(n << 10)})
		}
	}
	var only *regexp.Regexp
	if b.o.rows != "" {
		var err error
		if only, err = regexp.Compile(b.o.rows); err != nil {
			b.sections = append(b.sections, "## Instructions per request\n\nskipped: -rows: "+err.Error()+"\n")
			return
		}
	}
	var rows []*instrRow
	keys := oneRule(b.primary.addr)
	keys.yaml = clientKeysYAML
	kh := [][2]string{{"Authorization", "Bearer " + benchClientKey}}
	for _, bd := range bodies {
		for _, r := range []struct {
			name    string
			headers [][2]string
			start   func(wrap string) (*proxy, error)
		}{
			{"bare proxy", nil, func(wrap string) (*proxy, error) { return b.bareWith(wrap, b.primary.addr) }},
			{rowSy1, nil, func(wrap string) (*proxy, error) {
				c := oneRule(b.primary.addr)
				c.bin = wrap
				return b.switchyard(c)
			}},
			{rowSy1 + ", client keys", kh, func(wrap string) (*proxy, error) {
				c := keys
				c.bin = wrap
				return b.switchyard(c)
			}},
			{rowSy1 + ", access log", nil, func(wrap string) (*proxy, error) {
				c := oneRule(b.primary.addr)
				c.accessLog = true
				c.bin = wrap
				return b.switchyard(c)
			}},
		} {
			if only != nil && !only.MatchString(r.name+", "+bd.name) {
				continue
			}
			rows = append(rows, b.instrRun(r.name, bd.name, bd.b, r.headers, r.start))
		}
	}
	b.sections = append(b.sections, instrSection(rows))
}

// instrRun starts a proxy under callgrind (start gets the wrapper script to
// run in place of the binary), warms it up, counts instrRequests requests
// and reads the dump.
func (b *bench) instrRun(name, bodyName string, body []byte, headers [][2]string, startProxy func(wrap string) (*proxy, error)) *instrRow {
	r := &instrRow{name: name, body: bodyName}
	dir, err := os.MkdirTemp(b.tmp, "callgrind-*")
	if err != nil {
		r.err = err
		return r
	}
	bin := b.bareBin
	if name != "bare proxy" {
		bin = b.syBin
	}
	wrap := filepath.Join(dir, "run.sh")
	script := fmt.Sprintf("#!/bin/sh\nGODEBUG=asyncpreemptoff=1 exec valgrind -q --tool=callgrind --callgrind-out-file=%s/cg.%%p.out %s \"$@\"\n", dir, bin)
	if err := os.WriteFile(wrap, []byte(script), 0o755); err != nil {
		r.err = err
		return r
	}
	b.log.Info().Str("row", name).Str("body", bodyName).Msg("instructions: starting under callgrind")
	p, err := startProxy(wrap)
	if err != nil {
		r.err = err
		return r
	}
	defer p.stop()
	addr := p.addr
	cfg := load.Config{URL: "http://" + addr + "/v1/chat/completions", Body: body, Headers: headers, Connections: instrConns}
	pid := strconv.Itoa(p.pid())
	run := func(n int64) error {
		cfg.Requests = n
		res, err := load.Run(b.ctx, cfg)
		if err != nil {
			return err
		}
		if res.Status[200] != n {
			return fmt.Errorf("%d of %d requests answered 200 (%v; first error %q)", res.Status[200], n, res.Status, res.FirstError)
		}
		return nil
	}
	dump := func(part int) (string, error) {
		if out, err := exec.CommandContext(b.ctx, "callgrind_control", "-d", pid).CombinedOutput(); err != nil {
			return "", fmt.Errorf("callgrind_control: %v: %s", err, out)
		}
		file := filepath.Join(dir, "cg."+pid+".out."+strconv.Itoa(part))
		for i := 0; i < 100; i++ { // the dump is written when the process next polls its command file
			if st, err := os.Stat(file); err == nil && st.Size() > 0 {
				time.Sleep(200 * time.Millisecond) // let the write finish
				return file, nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return "", fmt.Errorf("callgrind wrote no dump %s", file)
	}
	if r.err = run(instrWarmup); r.err != nil {
		return r
	}
	if _, r.err = dump(1); r.err != nil {
		return r
	}
	if r.err = run(instrRequests); r.err != nil {
		return r
	}
	file, err := dump(2)
	if err != nil {
		r.err = err
		return r
	}
	r.fns, r.total, r.err = readCallgrind(b, file, instrRequests)
	if b.o.keepCallgrind != "" && r.err == nil {
		r.err = keepDump(file, b.o.keepCallgrind, name+", "+bodyName)
	}
	return r
}

// keepDump copies a counted dump into dir as a file named after its row,
// for a closer look (callgrind_annotate --inclusive=yes --tree=caller).
func keepDump(file, dir, row string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, row)
	return os.WriteFile(filepath.Join(dir, "callgrind."+name+".out"), data, 0o644)
}

// bareWith starts the bare proxy through the wrapper script wrap.
func (b *bench) bareWith(wrap, upstream string) (*proxy, error) {
	saved := b.bareBin
	b.bareBin = wrap
	defer func() { b.bareBin = saved }()
	return b.bare(upstream)
}

// readCallgrind reads a dump's self cost (exclusive instructions) by
// function, divided by n, and its total. It reads the callgrind format
// itself rather than callgrind_annotate's listing: Go switches stacks
// under callgrind's feet, and the listing then shows some frames (a
// thread's entry, a goroutine blocked in a read for the whole count) with
// a figure that is in no total, so that the listed functions summed to
// more than the program. The self costs in the file sum to its total.
func readCallgrind(_ *bench, file string, n int) (map[string]float64, float64, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	names := map[string]string{} // compressed id "(123)" -> name
	self := map[string]int64{}   // by id
	var cur string
	var summary int64
	skip := false // the line after calls= is a call's inclusive cost
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if skip {
			skip = false
			continue
		}
		switch {
		case strings.HasPrefix(line, "summary:"):
			summary, _ = strconv.ParseInt(strings.TrimSpace(line[len("summary:"):]), 10, 64)
		case strings.HasPrefix(line, "fn="), strings.HasPrefix(line, "cfn="):
			def := line[strings.IndexByte(line, '=')+1:]
			id, name, _ := strings.Cut(def, " ")
			if name != "" {
				names[id] = name
			}
			if line[0] == 'f' {
				cur = id
			}
		case strings.HasPrefix(line, "calls="):
			skip = true
		case line != "" && cur != "" && (line[0] >= '0' && line[0] <= '9' || line[0] == '+' || line[0] == '-' || line[0] == '*'):
			fields := strings.Fields(line)
			if v, err := strconv.ParseInt(fields[len(fields)-1], 10, 64); err == nil && len(fields) >= 2 {
				self[cur] += v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	if summary == 0 {
		return nil, 0, fmt.Errorf("no summary line in %s", file)
	}
	fns := map[string]float64{}
	for id, v := range self {
		fns[funcName(cmp.Or(names[id], id))] += float64(v) / float64(n)
	}
	return fns, float64(summary) / float64(n), nil
}

// funcName is a function's name without a recursion mark ('2).
func funcName(s string) string {
	if i := strings.LastIndex(s, "'"); i > 0 {
		if _, err := strconv.Atoi(s[i+1:]); err == nil {
			s = s[:i]
		}
	}
	return s
}

// instrGroup puts a function in a group of the report: Switchyard's own
// packages by name, fasthttp, the Go runtime and the rest of the standard
// library.
func instrGroup(fn string) string {
	switch {
	case strings.HasPrefix(fn, "github.com/switchyard/switchyard/"):
		rest := strings.TrimPrefix(fn, "github.com/switchyard/switchyard/")
		if i := strings.IndexAny(rest, "."); i > 0 {
			return "switchyard " + rest[:i]
		}
		return "switchyard"
	case strings.HasPrefix(fn, "github.com/valyala/fasthttp"):
		return "fasthttp"
	case strings.HasPrefix(fn, "github.com/"), strings.HasPrefix(fn, "golang.org/"):
		return "other modules"
	case strings.HasPrefix(fn, "runtime."), strings.HasPrefix(fn, "internal/runtime"), strings.HasPrefix(fn, "sync."),
		strings.HasPrefix(fn, "internal/"), strings.HasPrefix(fn, "aeshash"), strings.HasPrefix(fn, "memeqbody"),
		strings.HasPrefix(fn, "indexbytebody"), strings.HasPrefix(fn, "indexbody"), strings.HasPrefix(fn, "countbody"):
		return "Go runtime, sync, bytealg"
	case !strings.Contains(fn, "."):
		return "libc, vdso"
	}
	return "Go standard library"
}

// instrSection is the Markdown of the instruction counts: totals and
// ratios, Switchyard's excess by group, and the functions it comes from.
func instrSection(rows []*instrRow) string {
	var s strings.Builder
	s.WriteString("## Instructions per request\n\n")
	fmt.Fprintf(&s, "User-space instructions per request counted by valgrind's callgrind (repeatable on a busy machine, unlike CPU time): %d requests over %d connections after %d of warm-up, each proxy unpinned with its default GOMAXPROCS, GODEBUG=asyncpreemptoff=1. System calls are not counted (they cost the same for both). `go run ./bench/cmd/benchrun -only instructions` runs this part alone.\n\n", instrRequests, instrConns, instrWarmup)
	t := &table{head: []string{"row", "body", "instructions/request", "vs bare proxy"}}
	var base *instrRow
	for _, r := range rows {
		if r.name == "bare proxy" {
			base = r
		}
		if r.err != nil {
			t.add(r.name, r.body, "failed: "+firstLine(r.err.Error()))
			continue
		}
		ratio := ""
		if base != nil && base.err == nil && base.body == r.body {
			ratio = fmt.Sprintf("%.2f×", r.total/base.total)
		}
		t.add(r.name, r.body, fmt.Sprintf("%.0f", r.total), ratio)
	}
	s.WriteString(t.String())
	for _, sy := range rows {
		if sy.name != rowSy1 || sy.err != nil {
			continue
		}
		var bare *instrRow
		for _, r := range rows {
			if r.name == "bare proxy" && r.body == sy.body && r.err == nil {
				bare = r
			}
		}
		if bare == nil {
			continue
		}
		fmt.Fprintf(&s, "### Where the 1-rule row's extra instructions go (%s body)\n\n", sy.body)
		s.WriteString(excessTable(bare.fns, sy.fns, 0).String())
		s.WriteString(excessTable(bare.fns, sy.fns, 30).String())
	}
	return s.String()
}

// excessTable lists Switchyard's instructions per request over the bare
// proxy's: by group (top 0), or the top functions.
func excessTable(bare, sy map[string]float64, top int) *table {
	key := func(fn string) string { return fn }
	head := "function"
	if top == 0 {
		key, head = instrGroup, "group"
	}
	b, y := map[string]float64{}, map[string]float64{}
	for fn, v := range bare {
		b[key(fn)] += v
	}
	for fn, v := range sy {
		y[key(fn)] += v
	}
	names := make([]string, 0, len(y))
	for k := range y {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := y[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Slice(names, func(i, j int) bool { return y[names[i]]-b[names[i]] > y[names[j]]-b[names[j]] })
	if top > 0 && len(names) > top {
		names = names[:top]
	}
	t := &table{head: []string{head, "bare proxy", "Switchyard", "difference"}}
	for _, n := range names {
		t.add("`"+n+"`", fmt.Sprintf("%.0f", b[n]), fmt.Sprintf("%.0f", y[n]), fmt.Sprintf("%+.0f", y[n]-b[n]))
	}
	return t
}
