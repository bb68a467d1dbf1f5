package audit

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

func testKey(t *testing.T) (ed25519.PrivateKey, ed25519.PublicKey) {
	t.Helper()
	priv, pub, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParsePrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k, p
}

var euTarget = &upstream.Target{Name: "eu", Provider: "openai", Residency: "eu",
	Endpoint: upstream.Endpoint{BaseURL: "https://eu.example.com/v1", APIKey: "sk-secret"}}

func writeLines(t *testing.T, l *Log, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		l.Add(&telemetry.Entry{RequestID: []byte(fmt.Sprintf("req-%d", i)), Key: "globex-eu", Surface: router.SurfaceChat,
			Model: []byte("gpt-4o-mini"), Rule: 3, Walked: []string{"eu"}, Status: 200,
			Steps: []telemetry.Step{{Target: euTarget, Class: upstream.ClassOK}}}, "abc123")
	}
}

// logSet returns the files of the log at path in chain order.
func logSet(t *testing.T, path string) []string {
	t.Helper()
	ext := filepath.Ext(path)
	rotated, _ := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	sort.Strings(rotated)
	return append(rotated, path)
}

func TestLogWritesAVerifiableRotatedChain(t *testing.T) {
	priv, pub := testKey(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(Options{Path: path, Key: priv, MaxFileBytes: 8 << 10, Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	writeLines(t, l, 0, 150)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Restarted: the chain continues in the same file.
	l, err = Open(Options{Path: path, Key: priv, MaxFileBytes: 8 << 10, Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	writeLines(t, l, 150, 50)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := logSet(t, path)
	if len(files) < 3 {
		t.Fatalf("files %v; want a rotated set", files)
	}
	r, err := Verify(pub, files)
	if err != nil {
		t.Fatal(err)
	}
	if r.Records != 200 || r.Unsigned != 0 || r.Checkpoints < len(files) {
		t.Fatalf("report %+v", r)
	}
	data, _ := os.ReadFile(files[0])
	first := strings.SplitN(string(data), "\n", 2)[0]
	for _, s := range []string{`"replica":"r1","seq":1,"request_id":"req-0","key":"globex-eu","surface":"chat","model":"gpt-4o-mini","rule":"3","chain":["eu"],"attempts":[{"target":"eu","provider":"openai","host":"eu.example.com","residency":"eu","outcome":"ok"}],"status":200,"config_hash":"abc123","prev":"` + genesis + `"}`} {
		if !strings.Contains(first, s) {
			t.Errorf("first line %s\nlacks %s", first, s)
		}
	}
	all := ""
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all += string(b)
	}
	if strings.Contains(all, "sk-secret") || strings.Contains(all, "/v1") {
		t.Error("a credential or base URL path reached the audit log")
	}
}

// tamper applies fn to the lines of file i of a copy of the set.
func tamperedCopy(t *testing.T, files []string, i int, fn func(lines [][]byte) [][]byte) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for j, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if j == i {
			lines := bytes.SplitAfter(b, []byte("\n"))
			if len(lines[len(lines)-1]) == 0 {
				lines = lines[:len(lines)-1]
			}
			b = bytes.Join(fn(lines), nil)
		}
		p := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestVerifyCatchesTampering(t *testing.T) {
	priv, pub := testKey(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(Options{Path: path, Key: priv, MaxFileBytes: 8 << 10, Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	writeLines(t, l, 0, 200)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := logSet(t, path)
	if _, err := Verify(pub, files); err != nil {
		t.Fatalf("untouched set: %v", err)
	}
	_, otherPub := testKey(t)
	cases := []struct {
		name  string
		files func() []string
		pub   ed25519.PublicKey
		want  string
	}{
		{"edited byte", func() []string {
			return tamperedCopy(t, files, 1, func(ls [][]byte) [][]byte {
				ls[4] = bytes.Replace(ls[4], []byte(`"status":200`), []byte(`"status":201`), 1)
				return ls
			})
		}, pub, ":6: prev is not the SHA-256 of the line before it"},
		{"deleted line", func() []string {
			return tamperedCopy(t, files, 1, func(ls [][]byte) [][]byte { return append(ls[:3:3], ls[4:]...) })
		}, pub, ":4: prev is not the SHA-256"},
		{"inserted line", func() []string {
			return tamperedCopy(t, files, 1, func(ls [][]byte) [][]byte {
				return append(append(ls[:3:3], ls[2]), ls[3:]...)
			})
		}, pub, ":4: prev is not the SHA-256"},
		{"swapped lines", func() []string {
			return tamperedCopy(t, files, 1, func(ls [][]byte) [][]byte { ls[3], ls[4] = ls[4], ls[3]; return ls })
		}, pub, ":4: prev is not the SHA-256"},
		{"wrong public key", func() []string { return files }, otherPub, "checkpoint signature does not verify with this public key"},
		{"rotated file removed", func() []string { return append(files[:1:1], files[2:]...) }, pub, ":1: this file does not continue"},
		{"first file removed", func() []string { return files[1:] }, pub, ":1: this line continues a chain whose earlier lines are not given"},
		{"checkpoint edited", func() []string {
			return tamperedCopy(t, files, 0, func(ls [][]byte) [][]byte {
				last := ls[len(ls)-1]
				ls[len(ls)-1] = bytes.Replace(last, []byte(`"checkpoint":"2`), []byte(`"checkpoint":"3`), 1)
				return ls
			})
		}, pub, "checkpoint signature does not verify"},
	}
	for _, c := range cases {
		_, err := Verify(c.pub, c.files())
		var brk *Break
		if !errors.As(err, &brk) || !strings.Contains(brk.Error(), c.want) {
			t.Errorf("%s: %v; want a break containing %q", c.name, err, c.want)
		}
	}
}

func TestLogResumesAfterAPartialLine(t *testing.T) {
	priv, pub := testKey(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(Options{Path: path, Key: priv})
	if err != nil {
		t.Fatal(err)
	}
	writeLines(t, l, 0, 10)
	l.Sync()
	// A crash mid-write: a copy of the file as it is now (no checkpoint
	// yet) with a partial line at the end.
	b, _ := os.ReadFile(path)
	_ = l.Close()
	path = filepath.Join(t.TempDir(), "crashed.jsonl")
	if err := os.WriteFile(path, append(b, `{"time":"2026-`...), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(pub, []string{path})
	if err != nil || !r.Partial || r.Unsigned != 10 || r.Records != 10 {
		t.Fatalf("report %+v err %v; want 10 unsigned lines and a partial tail", r, err)
	}
	l, err = Open(Options{Path: path, Key: priv})
	if err != nil {
		t.Fatal(err)
	}
	writeLines(t, l, 10, 5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = Verify(pub, []string{path})
	if err != nil || r.Partial || r.Records != 15 || r.Unsigned != 0 {
		t.Fatalf("report %+v err %v", r, err)
	}
}

// TestLogResumesAfterRotationWithEmptyFile: a crash right after a rotation
// leaves the current file empty (created, no line yet) or holding only a
// partial first line; the next start continues the chain from the newest
// rotated file's last line instead of starting a new chain at seq 1.
func TestLogResumesAfterRotationWithEmptyFile(t *testing.T) {
	for _, tail := range []string{"", `{"time":"2026-`} {
		priv, pub := testKey(t)
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		l, err := Open(Options{Path: path, Key: priv, MaxFileBytes: 4 << 10})
		if err != nil {
			t.Fatal(err)
		}
		writeLines(t, l, 0, 40)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		set := logSet(t, path)
		if len(set) < 3 {
			t.Fatalf("files %v; want a rotated set", set)
		}
		// The crash: the current file rotated away (renamed after its first
		// line's seq, as rotate names it) and the new one as rotate leaves
		// it before its first whole line.
		cur, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		first := seqOf(cur[:bytes.IndexByte(cur, '\n')+1])
		if err := os.Rename(path, filepath.Join(filepath.Dir(path), fmt.Sprintf("audit-%012d.jsonl", first))); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(tail), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err = Open(Options{Path: path, Key: priv, MaxFileBytes: 4 << 10})
		if err != nil {
			t.Fatal(err)
		}
		writeLines(t, l, 40, 40)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Verify(pub, logSet(t, path))
		if err != nil || r.Records != 80 {
			t.Fatalf("tail %q: report %+v err %v; want one chain of 80 records", tail, r, err)
		}
	}
}

func TestLogNamesARefusedMember(t *testing.T) {
	priv, _ := testKey(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(Options{Path: path, Key: priv})
	if err != nil {
		t.Fatal(err)
	}
	us := &upstream.Target{Name: "us", Provider: "openai", Residency: "us", Endpoint: upstream.Endpoint{BaseURL: "https://us.example.com/v1"}}
	l.Add(&telemetry.Entry{RequestID: []byte("r"), Key: "eu-key", Surface: router.SurfaceChat, Model: []byte("m"), Rule: 0,
		Walked: []string{"eu", "us"}, Status: 500, Steps: []telemetry.Step{{Target: euTarget, Class: upstream.ClassServer},
			{Target: us, Class: upstream.ClassClient, Refused: true}}}, "h")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := `"attempts":[{"target":"eu","provider":"openai","host":"eu.example.com","residency":"eu","outcome":"server"},{"target":"us","provider":"openai","host":"us.example.com","residency":"us","outcome":"residency_refused"}],"status":500`
	if !strings.Contains(string(b), want) {
		t.Fatalf("line %s\nlacks %s", b, want)
	}
}

// TestLinesReachTheFileWithoutSync: the writer takes the batch on its own
// (every FlushEvery), with no Sync, Close or full batch to prompt it.
func TestLinesReachTheFileWithoutSync(t *testing.T) {
	priv, _ := testKey(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(Options{Path: path, Key: priv})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	writeLines(t, l, 0, 3)
	for i := 0; ; i++ {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) == 3 && l.Pending() == 0 {
			break
		}
		if i == 1000 { // ten seconds: a writer that never wakes
			t.Fatalf("after 10s the file holds %q, %d pending; want 3 lines", b, l.Pending())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAddAfterCloseWritesNothing: Close writes every line added before it;
// an Add after it returns at once and adds nothing.
func TestAddAfterCloseWritesNothing(t *testing.T) {
	priv, pub := testKey(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(Options{Path: path, Key: priv})
	if err != nil {
		t.Fatal(err)
	}
	writeLines(t, l, 0, 5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	writeLines(t, l, 5, 5)
	l.Sync()
	r, err := Verify(pub, []string{path})
	if err != nil || r.Records != 5 || r.Unsigned != 0 || l.Pending() != 0 {
		t.Fatalf("report %+v err %v pending %d; want 5 signed lines", r, err, l.Pending())
	}
}

// TestAppendJSONStringMatchesUpstream: the audit log's one-copy fast path
// writes exactly what upstream.AppendJSONString writes.
func TestAppendJSONStringMatchesUpstream(t *testing.T) {
	for _, s := range []string{"", "gpt-4o-mini", "0123456789abcdef0123456789abcdef", `a"b`, `a\b`, "a\nb\tc\rd\x01",
		"<script>&", "héllo", "\u2028\u2029", "bad \xff utf8", "eu.example.com:8443", "globex-eu"} {
		got, want := appendJSONString([]byte("x"), s), upstream.AppendJSONString([]byte("x"), s)
		if !bytes.Equal(got, want) {
			t.Errorf("%q: %s; want %s", s, got, want)
		}
	}
}

// TestLineTimesFollowSeq: concurrent requests' lines carry times in the
// order of their seq (each is stamped as it takes its place), even with a
// clock read that yields the processor.
func TestLineTimesFollowSeq(t *testing.T) {
	priv, _ := testKey(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var tick atomic.Int64
	now := func() time.Time {
		ts := time.Unix(0, tick.Add(1000)).UTC()
		runtime.Gosched()
		return ts
	}
	l, err := Open(Options{Path: path, Key: priv, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeLines(t, l, g*200, 200)
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var last time.Time
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var rec struct{ Time string }
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Time == "" {
			continue // the checkpoint
		}
		at, err := time.Parse(time.RFC3339Nano, rec.Time)
		if err != nil {
			t.Fatal(err)
		}
		if at.Before(last) {
			t.Fatalf("line %d: time %s before the line above it (%s)", i+1, at, last)
		}
		last = at
	}
}

// TestBehindWhileTheWriterIsStuck: with the writer stuck (here: in its
// clock, as on a hung disk), more than MaxBehind lines added make Behind
// report true, so the gateway refuses requests 503 audit_unavailable; once
// the writer moves again every line is written and Behind is false.
func TestBehindWhileTheWriterIsStuck(t *testing.T) {
	priv, pub := testKey(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	gate, stuck := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var lp atomic.Pointer[Log]
	now := func() time.Time {
		// Add reads the clock holding l.mu; the writer, after a turn
		// that left lines unsigned, without it: that call blocks until
		// the gate opens.
		if l := lp.Load(); l != nil && l.mu.TryLock() {
			l.mu.Unlock()
			once.Do(func() { close(stuck) })
			<-gate
		}
		return time.Now()
	}
	l, err := Open(Options{Path: path, Key: priv, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	lp.Store(l)
	writeLines(t, l, 0, 1)
	<-stuck
	writeLines(t, l, 1, MaxBehind)
	if l.Behind() {
		t.Fatalf("Behind with %d pending; want false up to MaxBehind", l.Pending())
	}
	writeLines(t, l, MaxBehind+1, 1)
	if !l.Behind() {
		t.Fatalf("not Behind with %d pending", l.Pending())
	}
	close(gate)
	l.Sync()
	if l.Behind() || l.Pending() != 0 {
		t.Fatalf("Behind %v with %d pending after the writer caught up", l.Behind(), l.Pending())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := Verify(pub, []string{path}); err != nil || r.Records != MaxBehind+2 || r.Unsigned != 0 {
		t.Fatalf("report %+v err %v", r, err)
	}
}

// TestLogCarriesUsage: a line has the answer's usage in its four parts,
// only the parts reported, and none without usage; the chain verifies.
func TestLogCarriesUsage(t *testing.T) {
	priv, pub := testKey(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(Options{Path: path, Key: priv})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []upstream.Usage{
		{Prompt: 100, CacheRead: 90, CacheWrite: 8, Completion: 5, HasPrompt: true, HasCompletion: true},
		{Prompt: 8, HasPrompt: true},
		{},
	} {
		l.Add(&telemetry.Entry{RequestID: []byte("r"), Key: "k", Surface: router.SurfaceMessages, Model: []byte("m"),
			Walked: []string{"eu"}, Status: 200, Usage: u, Steps: []telemetry.Step{{Target: euTarget, Class: upstream.ClassOK}}}, "h")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, want := range []string{
		`"status":200,"usage":{"input":2,"cache_read":90,"cache_write":8,"output":5},"config_hash"`,
		`"status":200,"usage":{"input":8,"cache_read":0,"cache_write":0},"config_hash"`,
		`"status":200,"config_hash"`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Fatalf("line %d %s\nlacks %s", i, lines[i], want)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &v); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
	}
	if _, err := Verify(pub, []string{path}); err != nil {
		t.Fatalf("verify: %v", err)
	}
}
