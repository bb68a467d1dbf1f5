package harness

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// Chart geometry (SVG user units).
const (
	svgW, svgH             = 820, 440
	padL, padR, padT, padB = 70, 230, 40, 55
	plotW                  = svgW - padL - padR
	plotH                  = svgH - padT - padB
	legendX                = svgW - padR + 18
	minLatencyUS           = 1.0
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// SVG renders the sweeps as a line chart: offered load (req/s, linear) on x,
// latency (µs, log scale) on y; p99 solid, p50 dashed, one color per series.
// It returns "" when there is nothing to plot.
func (rep *Report) SVG() string {
	type pt struct{ x, y float64 }
	type line struct {
		label, color string
		dashed       bool
		pts          []pt
	}
	var lines []line
	xMax, yMin, yMax := 0.0, math.Inf(1), 0.0
	for i, s := range rep.Sweeps {
		color := palette[i%len(palette)]
		for _, q := range []float64{0.99, 0.5} {
			l := line{label: fmt.Sprintf("%s p%g", s.Name, q*100), color: color, dashed: q == 0.5}
			for _, p := range s.Points {
				if p.Result == nil || p.Result.Completed == 0 {
					continue
				}
				y := float64(p.Result.Latency.Quantile(q)) / float64(time.Microsecond)
				y = math.Max(y, minLatencyUS)
				l.pts = append(l.pts, pt{p.Offered, y})
				xMax = math.Max(xMax, p.Offered)
				yMin, yMax = math.Min(yMin, y), math.Max(yMax, y)
			}
			if len(l.pts) > 0 {
				sortPts := l.pts
				for a := 1; a < len(sortPts); a++ {
					for b := a; b > 0 && sortPts[b].x < sortPts[b-1].x; b-- {
						sortPts[b], sortPts[b-1] = sortPts[b-1], sortPts[b]
					}
				}
				lines = append(lines, l)
			}
		}
	}
	if len(lines) == 0 {
		return ""
	}
	// Axes: x from 0 to a round number; y over whole decades.
	xTop := niceCeil(xMax * 1.05)
	lo := math.Pow(10, math.Floor(math.Log10(yMin)))
	hi := math.Pow(10, math.Ceil(math.Log10(yMax*1.0001)))
	if hi <= lo {
		hi = lo * 10
	}
	sx := func(x float64) float64 { return padL + x/xTop*plotW }
	sy := func(y float64) float64 {
		return padT + plotH - (math.Log10(y)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*plotH
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">Latency vs offered load (open loop)</text>`+"\n", padL)
	// Grid and y ticks: each decade, with 2 and 5 as minor lines.
	for d := lo; d <= hi*1.0001; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := d * m
			if v > hi*1.0001 {
				break
			}
			y := sy(v)
			stroke, label := "#eee", ""
			if m == 1 {
				stroke, label = "#ccc", formatMicros(v)
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", padL, y, padL+plotW, y, stroke)
			if label != "" {
				fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, y+4, label)
			}
		}
	}
	step := xTop / 5
	for i := 0; i <= 5; i++ {
		x := sx(float64(i) * step)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", x, padT, x, padT+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, padT+plotH+18, formatRate(float64(i)*step))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", padL, padT, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">offered load (requests/s)</text>`+"\n", padL+plotW/2, svgH-12)
	fmt.Fprintf(&b, `<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">latency (log scale)</text>`+"\n", padT+plotH/2, padT+plotH/2)
	if rep.HalfRate > 0 && rep.HalfRate <= xTop {
		x := sx(rep.HalfRate)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="2,3"/>`+"\n", x, padT, x, padT+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#666">half saturation</text>`+"\n", x, padT-4)
	}
	for i, l := range lines {
		var pts []string
		for _, p := range l.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(p.x), sy(p.y)))
		}
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", l.color, dash, strings.Join(pts, " "))
		for _, p := range l.pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", sx(p.x), sy(p.y), l.color)
		}
		ly := padT + 10 + i*20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", legendX, ly, legendX+28, ly, l.color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", legendX+34, ly+4, html.EscapeString(l.label))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to a round multiple of a power of ten that splits
// into five even ticks.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func formatMicros(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%g s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%g ms", us/1e3)
	default:
		return fmt.Sprintf("%g µs", us)
	}
}

func formatRate(r float64) string {
	if r >= 1000 {
		return fmt.Sprintf("%gk", math.Round(r/100)/10)
	}
	return fmt.Sprintf("%g", math.Round(r))
}
