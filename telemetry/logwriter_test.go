package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is an output that keeps what it is given and counts the writes.
type recorder struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes++
	return r.b.Write(p)
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

// gate is a recorder whose writes wait until open is closed: a log
// consumer that stopped reading for a while.
type gate struct {
	recorder
	open chan struct{}
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	return g.recorder.Write(p)
}

// stallFor bounds how long a test waits for what must not block: a
// deadlock detector, not a timing assertion.
const stallFor = 10 * time.Second

func closeOrFail(t *testing.T, w *LogWriter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stallFor)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// Lines written by many goroutines at once arrive whole, each goroutine's
// in the order it wrote them, none lost.
func TestLogWriterLinesWholeAndInOrder(t *testing.T) {
	var out recorder
	w := NewLogWriter(&out)
	const writers, lines = 8, 500
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				// Lengths vary so a split or an interleaving shows in the JSON.
				line := fmt.Sprintf(`{"g":%d,"i":%d,"pad":%q}`+"\n", g, i, strings.Repeat("x", (g*131+i*17)%700))
				if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
			}
		})
	}
	wg.Wait()
	closeOrFail(t, w)
	next := make([]int, writers)
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(make([]byte, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		var rec struct{ G, I int }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d is not whole: %v: %q", n, err, sc.Text())
		}
		if rec.I != next[rec.G] {
			t.Fatalf("writer %d: line %d after %d", rec.G, rec.I, next[rec.G]-1)
		}
		next[rec.G]++
		n++
	}
	if n != writers*lines {
		t.Fatalf("%d lines arrived, want %d", n, writers*lines)
	}
	if w.Dropped() != 0 {
		t.Fatalf("dropped %d lines with a live output", w.Dropped())
	}
}

// Lines that gather while the output is busy go out in one write, not one
// write each.
func TestLogWriterBatchesWhileOutputBusy(t *testing.T) {
	out := &gate{open: make(chan struct{})}
	w := NewLogWriter(out)
	const lines = 100
	for i := range lines {
		fmt.Fprintf(w, "line %d\n", i)
	}
	close(out.open)
	closeOrFail(t, w)
	if got := strings.Count(out.String(), "\n"); got != lines {
		t.Fatalf("%d lines written, want %d", got, lines)
	}
	// The first line may have been taken alone before the rest came.
	if out.writes > 2 {
		t.Fatalf("%d writes for %d lines gathered behind a busy output, want at most 2", out.writes, lines)
	}
}

// A stalled output (a pipe nobody reads) never blocks Write: past the
// bound lines are dropped and counted, and once the output is read again
// every line kept arrives, followed by one line giving the count, in the
// log's format.
func TestLogWriterStalledOutputDropsAndSaysSo(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			pr, pw := io.Pipe()
			w := NewLogWriter(pw)
			log, err := NewLogger("info", format, w)
			if err != nil {
				t.Fatal(err)
			}
			pad := strings.Repeat("p", 1000)
			const total = 6000 // about 6 MB of lines against a 4 MiB bound
			wrote := make(chan struct{})
			go func() {
				defer close(wrote)
				for i := range total {
					log.Info().Int("seq", i).Str("pad", pad).Msg("request")
				}
			}()
			select {
			case <-wrote:
			case <-time.After(stallFor):
				t.Fatal("Write blocked on a stalled output")
			}
			dropped := w.Dropped()
			if dropped == 0 || dropped >= total {
				t.Fatalf("dropped %d of %d lines, want some but not all", dropped, total)
			}
			var scrape bytes.Buffer
			w.WritePrometheus(&scrape)
			if want := "switchyard_log_lines_dropped_total " + strconv.FormatUint(dropped, 10) + "\n"; !strings.Contains(scrape.String(), want) ||
				!strings.Contains(scrape.String(), "# TYPE switchyard_log_lines_dropped_total counter\n") ||
				!strings.Contains(scrape.String(), "# HELP switchyard_log_lines_dropped_total Log lines dropped") {
				t.Fatalf("scrape %q, want the counter at %d with HELP and TYPE", scrape.String(), dropped)
			}

			// The consumer reads again.
			read := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(pr)
				read <- string(b)
			}()
			closeOrFail(t, w)
			pw.Close()
			got := strings.Split(strings.TrimSuffix(<-read, "\n"), "\n")
			kept := total - int(dropped)
			if len(got) != kept+1 {
				t.Fatalf("%d lines read, want %d kept and the note", len(got), kept)
			}
			for i, ln := range got[:kept] {
				// The lines kept are the first ones, in order.
				if !strings.Contains(ln, fmt.Sprintf("seq%s%d", map[string]string{"json": `":`, "console": "="}[format], i)) {
					t.Fatalf("line %d: %.80q", i, ln)
				}
			}
			note := got[kept]
			n := strconv.FormatUint(dropped, 10)
			switch format {
			case "json":
				var rec struct {
					Level   string
					Dropped uint64 `json:"dropped_lines"`
					Message string
				}
				if err := json.Unmarshal([]byte(note), &rec); err != nil || rec.Level != "warn" || rec.Dropped != dropped ||
					!strings.Contains(rec.Message, "dropped "+n+" log lines") {
					t.Fatalf("note %q (%v), want a warn line with dropped_lines %d", note, err, dropped)
				}
			case "console":
				if !strings.Contains(note, "WRN") || !strings.Contains(note, "dropped_lines="+n) {
					t.Fatalf("note %q, want a console WRN line with dropped_lines=%d", note, dropped)
				}
			}
		})
	}
}

// Close writes every line still buffered before it returns, and lines
// logged after it go straight out.
func TestLogWriterCloseWritesEverything(t *testing.T) {
	out := &gate{open: make(chan struct{})}
	w := NewLogWriter(out)
	const lines = 1000
	for i := range lines {
		fmt.Fprintf(w, "line %d\n", i)
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close(context.Background()) }()
	close(out.open)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range lines {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if out.String() != want.String() {
		t.Fatalf("after Close the output holds %d lines, want all %d in order", strings.Count(out.String(), "\n"), lines)
	}
	fmt.Fprintf(w, "after close\n")
	if !strings.HasSuffix(out.String(), "line 999\nafter close\n") {
		t.Fatalf("a line logged after Close was not written at once: %q", out.String()[len(out.String())-30:])
	}
}

// Close gives up when its context ends before a stalled output takes the
// lines, so a process can still exit.
func TestLogWriterCloseGivesUpOnStalledOutput(t *testing.T) {
	out := &gate{open: make(chan struct{})}
	defer close(out.open)
	w := NewLogWriter(out)
	fmt.Fprintf(w, "stuck\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Close(ctx); err != context.Canceled {
		t.Fatalf("Close on a stalled output = %v, want context.Canceled", err)
	}
}
