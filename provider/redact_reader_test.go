package provider

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestRedactReader: a stream read in pieces of any size comes out as
// Redact would make it whole: every occurrence, literal or escaped,
// redacted even where a read cut it, nothing else changed, and the
// source's error after the last byte.
func TestRedactReader(t *testing.T) {
	secrets := SecretsOf(&Endpoint{APIKey: "sk-live-0123456789", AWSSecretAccessKey: "aws/Secret+Key=0123456789abcdef"})
	var doc strings.Builder
	for i := range 40 {
		doc.WriteString(`{"line":` + strings.Repeat("x", i*37) + `,"a":"sk-live-0123456789","b":"sk-live-012345678","c":"\u0073k-live-0123456789",` +
			`"d":"aws\/Secret+Key=0123456789abcdef","e":"sk-live-0123456789sk-live-0123456789"}` + "\n")
	}
	in := []byte(doc.String())
	want := Redact(in, secrets)
	if bytes.Count(want, redactedSecret) != 40*5 {
		t.Fatalf("the reference redacted %d occurrences", bytes.Count(want, redactedSecret))
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"halves":   iotest.HalfReader,
		"data err": iotest.DataErrReader,
	}
	for name, wrap := range readers {
		got, err := io.ReadAll(RedactReader(wrap(bytes.NewReader(in)), secrets))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v\n got %d bytes, want %d", name, err, len(got), len(want))
		}
	}
	// Every cut of one occurrence, in two reads.
	one := []byte(`x"\u0073k-live-0123456789"y`)
	for cut := range len(one) {
		r := io.MultiReader(bytes.NewReader(one[:cut]), bytes.NewReader(one[cut:]))
		if got, _ := io.ReadAll(RedactReader(r, secrets)); string(got) != `x"[REDACTED]"y` {
			t.Errorf("cut at %d: %s", cut, got)
		}
	}
	// A failing source: what was read is released, then its error.
	boom := iotest.ErrReader(io.ErrClosedPipe)
	got, err := io.ReadAll(RedactReader(io.MultiReader(strings.NewReader("ok sk-live-0123456789 "), boom), secrets))
	if err != io.ErrClosedPipe || string(got) != "ok [REDACTED] " {
		t.Errorf("failing source: %q %v", got, err)
	}
	if r := strings.NewReader("x"); RedactReader(r, nil) != io.Reader(r) {
		t.Error("without secrets the reader is not the source itself")
	}
}
