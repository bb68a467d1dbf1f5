package batch

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/quota"
)

// newTestSpool is a spool in a fresh directory with room limit.
func newTestSpool(t *testing.T, s *Spools, limit int64) *spool {
	t.Helper()
	sp, err := s.newSpool(t.TempDir(), limit, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.remove)
	return sp
}

// spooled reads back what sp holds.
func spooled(t *testing.T, sp *spool) []byte {
	t.Helper()
	if err := sp.finish(); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(io.NewSectionReader(sp.f, 0, sp.size))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSpoolLinesOffsets: every line is handed over whole, with the place
// it starts in the spool, whatever the reads cut (one byte at a time, or a
// line over a chunk), and the spool holds the upload as sent.
func TestSpoolLinesOffsets(t *testing.T) {
	long := strings.Repeat("y", 3*readChunk)
	in := "first\nsecond line\r\n" + long + "\nlast without newline"
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"halves":   func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
	} {
		t.Run(name, func(t *testing.T) {
			var s Spools
			sp := newTestSpool(t, &s, 1<<30)
			var got []string
			ref, err := spoolLines(r(), sp, 4*readChunk, 1<<30, func(n int, line []byte, at int64) *hotpath.Refusal {
				if !bytes.Equal([]byte(in)[at:at+int64(len(line))], line) {
					t.Errorf("line %d at %d does not lie there in the upload", n, at)
				}
				got = append(got, strconv.Itoa(n)+":"+string(line[:min(len(line), 6)]))
				return nil
			})
			if ref != nil || err != nil {
				t.Fatalf("refusal %v, error %v", ref, err)
			}
			want := []string{"1:first", "2:second", "3:yyyyyy", "4:last w"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("lines %v; want %v", got, want)
			}
			if b := spooled(t, sp); string(b) != in {
				t.Fatal("the spool does not hold the upload as sent")
			}
		})
	}
}

func TestSpoolLinesRefusals(t *testing.T) {
	each := func(int, []byte, int64) *hotpath.Refusal { return nil }
	for _, c := range []struct {
		name, in     string
		maxLine      int
		maxFile      int64
		status       int
		wantInRefuse string
	}{
		{"line over the limit", "a\n" + strings.Repeat("b", 100) + "\nc\n", 50, 1 << 20, 413, "line 2 is over 50 bytes"},
		{"line over the limit across reads", "a\n" + strings.Repeat("b", 3*readChunk), readChunk, 1 << 30, 413, "line 2 is over"},
		{"file over the limit", strings.Repeat("abc\n", 100), 50, 200, 413, "over 200 bytes"},
		{"empty line", "a\n\nc\n", 50, 1 << 20, 400, "line 2 is empty"},
		{"empty file", "", 50, 1 << 20, 400, "the file is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s Spools
			sp := newTestSpool(t, &s, 1<<30)
			ref, err := spoolLines(strings.NewReader(c.in), sp, c.maxLine, c.maxFile, each)
			if err != nil || ref == nil || ref.Status != c.status || !strings.Contains(ref.Message, c.wantInRefuse) {
				t.Fatalf("refusal %+v, error %v; want %d %q", ref, err, c.status, c.wantInRefuse)
			}
		})
	}
}

// TestSpoolRequests: a message batch's requests are handed over whole with
// where they start, strings holding brackets and escaped quotes included;
// anything but {"requests": [...]} is refused.
func TestSpoolRequests(t *testing.T) {
	in := ` { "requests" : [ {"custom_id":"a","params":{"x":"}]\"{["}} ,` + "\n" +
		`{"custom_id":"b","params":{"y":[1,{"z":null}]}} ] } `
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
	} {
		t.Run(name, func(t *testing.T) {
			var s Spools
			sp := newTestSpool(t, &s, 1<<30)
			var got []string
			ref, err := spoolRequests(r(), sp, 1<<20, 1<<20, func(i int, elem []byte, at int64) *hotpath.Refusal {
				if in[at:at+int64(len(elem))] != string(elem) {
					t.Errorf("request %d is not where it says", i)
				}
				got = append(got, string(elem))
				return nil
			})
			if ref != nil || err != nil {
				t.Fatalf("refusal %+v, error %v", ref, err)
			}
			want := []string{`{"custom_id":"a","params":{"x":"}]\"{["}}`, `{"custom_id":"b","params":{"y":[1,{"z":null}]}}`}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("requests\n%v\nwant\n%v", got, want)
			}
			if string(spooled(t, sp)) != in {
				t.Fatal("the spool does not hold the body as sent")
			}
		})
	}
	for _, bad := range []string{
		`{"requests":[]}`, `{}`, `[]`, `{"requests":[{}] , "extra":1}`, `{"Requests":[{}]}`, `{"req\u0075ests":[{}]}`,
		`{"requests":[{"a":1}]`, `{"requests":[{"a":1}]} x`, `{"requests":[1]}`, `{"requests":{}}`,
	} {
		var s Spools
		sp := newTestSpool(t, &s, 1<<30)
		ref, err := spoolRequests(strings.NewReader(bad), sp, 1<<20, 1<<20, func(int, []byte, int64) *hotpath.Refusal { return nil })
		if err != nil || ref == nil || ref.Status != 400 {
			t.Errorf("%s: refusal %+v, error %v; want 400", bad, ref, err)
		}
	}
	var s Spools
	sp := newTestSpool(t, &s, 1<<30)
	ref, _ := spoolRequests(strings.NewReader(`{"requests":[{"a":"`+strings.Repeat("x", 100)+`"}]}`), sp, 50, 1<<20,
		func(int, []byte, int64) *hotpath.Refusal { return nil })
	if ref == nil || ref.Status != 413 || !strings.Contains(ref.Message, "requests[0]") {
		t.Fatalf("a request over its limit: %+v", ref)
	}
}

func TestParseLine(t *testing.T) {
	line := []byte(` {"custom_id":"1","method":"POST","url":"/v1/embeddings","body":{"model":"m","input":"x"}} `)
	s, body, off, err := parseLine(line)
	if err != nil || s.String() != "embeddings" || string(body) != `{"model":"m","input":"x"}` ||
		string(line[off:off+len(body)]) != string(body) {
		t.Fatalf("parseLine = %v, %q, %d, %v", s, body, off, err)
	}
	for _, bad := range []string{
		`{"custom_id":"1","method":"GET","url":"/v1/embeddings","body":{}}`,
		`{"custom_id":"1","method":"POST","url":"/v1/images/generations","body":{}}`,
		`{"custom_id":"1","method":"POST","url":"/v1/embeddings","body":[]}`,
		`{"custom_id":"1","method":"POST","url":"/v1/embeddings"}`,
		`{"custom_id":1,"method":"POST","url":"/v1/embeddings","body":{}}`,
		`{"custom_id":"1","method":"POST","url":"/v1/embeddings","body":{},"url":"/v1/responses"}`,
		`{"custom_id":"1","method":"POST","URL":"/v1/embeddings","body":{}}`,
		`{"custom_id":"1","method":"POST","url":"/v1/embeddings","body":{}}x`,
	} {
		if _, _, _, err := parseLine([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// TestRewriter: each member's rewrite of the recorded model literals,
// and nothing else, with its size known in advance.
func TestRewriter(t *testing.T) {
	in := `{"model":"a","x":1}` + "\n" + `{"model":"b"}` + "\n" + `{"model":"a"}`
	spans := []modelSpan{{at: 9, n: 3, model: 0}, {at: 29, n: 3, model: 1}, {at: 43, n: 3, model: 0}}
	for _, c := range []struct {
		repl [][]byte
		want string
	}{
		{[][]byte{nil, nil}, in},
		{[][]byte{[]byte(`"deploy-a"`), nil}, strings.ReplaceAll(in, `"a"`, `"deploy-a"`)},
		{[][]byte{[]byte(`"A"`), []byte(`"a \"quoted\" b"`)},
			`{"model":"A","x":1}` + "\n" + `{"model":"a \"quoted\" b"}` + "\n" + `{"model":"A"}`},
	} {
		f := filepath.Join(t.TempDir(), "spool")
		os.WriteFile(f, []byte(in), 0o600)
		src, _ := os.Open(f)
		got, err := io.ReadAll(iotest.OneByteReader(newRewriter(src, int64(len(in)), spans, c.repl)))
		src.Close()
		if err != nil || string(got) != c.want {
			t.Errorf("rewrite = %q, %v; want %q", got, err, c.want)
		}
		if n := rewrittenSize(int64(len(in)), spans, c.repl); n != int64(len(c.want)) {
			t.Errorf("size %d; want %d", n, len(c.want))
		}
	}
}

// TestSpoolsBound: the spools' space is reserved as bytes arrive and given
// back on removal; an upload that would pass the bound is refused.
func TestSpoolsBound(t *testing.T) {
	var s Spools
	dir := t.TempDir()
	a, err := s.newSpool(dir, 3*spoolChunk, 2*spoolChunk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.newSpool(dir, 3*spoolChunk, 2*spoolChunk); err != errSpoolFull {
		t.Fatalf("a second declared upload past the bound: %v", err)
	}
	b, err := s.newSpool(dir, 3*spoolChunk, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(make([]byte, spoolChunk)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write([]byte{1}); err != errSpoolFull {
		t.Fatalf("a write past the bound: %v", err)
	}
	a.remove()
	b.remove()
	if s.Used() != 0 {
		t.Fatalf("used %d after removal", s.Used())
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 {
		t.Fatalf("files left: %v", names)
	}
}

// TestCleanSpools removes a dead process's spool files and keeps a live
// one's.
func TestCleanSpools(t *testing.T) {
	dir := t.TempDir()
	dead := filepath.Join(dir, spoolPrefix+"999999999-1")
	mine := filepath.Join(dir, spoolPrefix+strconv.Itoa(os.Getpid())+"-2")
	other := filepath.Join(dir, "unrelated")
	for _, f := range []string{dead, mine, other} {
		os.WriteFile(f, []byte("x"), 0o600)
	}
	if n := CleanSpools(dir); n != 1 {
		t.Fatalf("removed %d; want 1", n)
	}
	for f, want := range map[string]bool{dead: false, mine: true, other: true} {
		if _, err := os.Stat(f); (err == nil) != want {
			t.Errorf("%s exists = %v; want %v", filepath.Base(f), err == nil, want)
		}
	}
}

func TestSplitPath(t *testing.T) {
	for in, want := range map[string]string{
		"": "||true", "/file-1": "file-1||true", "/file-1/content": "file-1|content|true", "/b_1/cancel": "b_1|cancel|true",
		"/x/other": "||false", "/a%2Fb": "||false", "/..": "||false", "/.x": "||false", "/a/b/c": "||false", "x": "||false",
		"/" + strings.Repeat("a", 129): "||false",
	} {
		id, sub, ok := splitPath([]byte(in))
		if got := string(id) + "|" + sub + "|" + strconv.FormatBool(ok); got != want && !(want[len(want)-5:] == "false" && !ok) {
			t.Errorf("splitPath(%q) = %s; want %s", in, got, want)
		}
	}
}

// TestResultUsage adds up the usage of succeeded results, however the
// bytes arrive, and skips the others.
func TestResultUsage(t *testing.T) {
	in := `{"custom_id":"a","result":{"type":"succeeded","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":5,"cache_creation_input_tokens":3,"output_tokens":7}}}}` + "\n" +
		`{"custom_id":"b","result":{"type":"errored","error":{}}}` + "\n" +
		`{"custom_id":"c","result":{"type":"succeeded","message":{"usage":{"input_tokens":1,"output_tokens":2}}}}`
	var u resultUsage
	for i := 0; i < len(in); i++ {
		u.feed([]byte{in[i]})
	}
	u.end()
	want := quota.Usage{Input: 11, CacheRead: 5, CacheWrite: 3, Output: 9, Known: true}
	if u.sum != want {
		t.Fatalf("usage = %+v; want %+v", u.sum, want)
	}
}
