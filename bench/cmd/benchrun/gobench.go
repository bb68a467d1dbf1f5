package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// microPlaceholder is where the report leaves room for the in-process
// micro-benchmarks (harness.Report.Markdown writes it).
const microPlaceholder = "<!-- router table -->"

// microSuite is one `go test -bench` run of the published micro-benchmarks:
// the router against its linear-scan twin, the hot path's peek and routing
// step, the walk against a bare HostClient, and the provider translations.
type microSuite struct {
	pkg, pattern, title string
}

var microSuites = []microSuite{
	{"./router/", "^(BenchmarkMatch|BenchmarkLinearScan|BenchmarkServesModel|BenchmarkMetadataParse)", "router: Match vs a linear scan of the same rules, models, X-Gateway-Metadata"},
	{"./hotpath/", "^(BenchmarkPeek|BenchmarkRouteRequest)", "hotpath: body peek and routing step"},
	{"./upstream/", "^(BenchmarkWalkNonStream|BenchmarkBareHostClient|BenchmarkTranslate|BenchmarkStreamEvent|BenchmarkBaselineEncodingJSON)", "upstream: walk vs bare HostClient, provider translation per request and per stream event"},
}

// benchLine is one parsed `go test -bench` result.
type benchLine struct {
	name                  string
	nsOp, bytesOp, allocs float64
}

// runMicro runs every micro suite and returns the Markdown that replaces
// microPlaceholder, plus the exact commands it ran.
func runMicro(ctx context.Context, root string, benchtime string) (string, error) {
	var b strings.Builder
	for _, s := range microSuites {
		args := []string{"test", "-run", "^$", "-bench", s.pattern, "-benchmem", "-benchtime", benchtime, s.pkg}
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, lastLines(string(out), 10))
		}
		lines := parseBench(out)
		fmt.Fprintf(&b, "%s — `go %s`\n\n", s.title, quoteArgs(args))
		b.WriteString("| benchmark | ns/op | B/op | allocs/op |\n|---|--:|--:|--:|\n")
		for _, l := range lines {
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f |\n", l.name, formatNs(l.nsOp), l.bytesOp, l.allocs)
		}
		b.WriteString("\n")
		if s.pkg == "./router/" {
			writeRouterRatios(&b, lines)
		}
	}
	return b.String(), nil
}

// writeRouterRatios prints Match's speed-up over the linear scan at each
// rule count (the target: ≥ 50× at 10,000 rules, ≤ 100 ns, 0 allocs).
func writeRouterRatios(b *strings.Builder, lines []benchLine) {
	ns := map[string]float64{}
	for _, l := range lines {
		ns[l.name] = l.nsOp
	}
	b.WriteString("| rules | Match | linear scan | speed-up |\n|--:|--:|--:|--:|\n")
	for _, n := range []string{"10", "1000", "10000"} {
		m, ok1 := ns["BenchmarkMatch/"+n]
		l, ok2 := ns["BenchmarkLinearScan/"+n]
		if !ok1 || !ok2 || m == 0 {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.0f× |\n", n, formatNs(m), formatNs(l), l/m)
	}
	b.WriteString("\n")
}

// parseBench reads `BenchmarkName-N  iters  x ns/op  y B/op  z allocs/op`
// lines; the -N GOMAXPROCS suffix is dropped.
func parseBench(out []byte) []benchLine {
	var res []benchLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		l := benchLine{name: f[0]}
		if i := strings.LastIndexByte(l.name, '-'); i > 0 {
			if _, err := strconv.Atoi(l.name[i+1:]); err == nil {
				l.name = l.name[:i]
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				l.nsOp = v
			case "B/op":
				l.bytesOp = v
			case "allocs/op":
				l.allocs = v
			}
		}
		res = append(res, l)
	}
	return res
}

func formatNs(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e4:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	case ns >= 100:
		return fmt.Sprintf("%.0f ns", ns)
	}
	return fmt.Sprintf("%.1f ns", ns)
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()* ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
