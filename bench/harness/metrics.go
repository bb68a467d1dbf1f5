package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// ScrapeCounter fetches a Prometheus text page from url and returns the
// value of the unlabelled sample name (e.g. "go_memstats_mallocs_total").
// found is false, with no error, when the page has no such sample.
func ScrapeCounter(url, name string) (v float64, found bool, err error) {
	status, body, err := fasthttp.GetTimeout(nil, url, 5*time.Second)
	if err != nil {
		return 0, false, err
	}
	if status != fasthttp.StatusOK {
		return 0, false, fmt.Errorf("GET %s: status %d", url, status)
	}
	v, found = findSample(body, name)
	return v, found, nil
}

// ScrapeSamples fetches a Prometheus text page from url once and returns
// the values of the unlabelled samples names, in order; found[i] is false
// when the page has no sample names[i].
func ScrapeSamples(url string, names ...string) (v []float64, found []bool, err error) {
	status, body, err := fasthttp.GetTimeout(nil, url, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	if status != fasthttp.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: status %d", url, status)
	}
	v, found = make([]float64, len(names)), make([]bool, len(names))
	for i, n := range names {
		v[i], found[i] = findSample(body, n)
	}
	return v, found, nil
}

func findSample(page []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		rest, ok := bytes.CutPrefix(line, []byte(name))
		if !ok || len(rest) == 0 || rest[0] != ' ' {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(string(f[0]), 64); err == nil {
			return v, true
		}
	}
	return 0, false
}
