package translate

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// FuzzStreamReset holds the pooled stream translators to a reset that
// forgets everything: the input's lines before a blank line are a first
// stream (another tenant's, left in any state: ended, failed or cut
// mid-answer), those after it a second; the second stream's events from a
// reset translator must be byte for byte those of a new one.
func FuzzStreamReset(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s + "\n\n" + chunk(`{"content":"Hi"}`)))
	}
	f.Add([]byte(strings.Join(releaseFirst, "\n") + "\n\n" + strings.Join(releaseSecond, "\n")))
	f.Fuzz(func(t *testing.T, in []byte) {
		first, second, _ := bytes.Cut(in, []byte("\n\n"))
		for _, mk := range []struct {
			name  string
			fresh func(model []byte) Stream
			reset func(Stream, []byte)
		}{
			{"responses", func(m []byte) Stream { return &responsesStream{meta: respMeta{model: m}, lastChat: -1} },
				func(s Stream, m []byte) {
					r := s.(*responsesStream)
					r.reset()
					r.meta.model = append(r.meta.model, m...)
				}},
			{"messages", func(m []byte) Stream { return &messagesStream{model: m, open: -1, openTool: -1} },
				func(s Stream, m []byte) { r := s.(*messagesStream); r.reset(); r.model = append(r.model, m...) }},
		} {
			want := randomIDs.ReplaceAll(runStream(mk.fresh([]byte("m2")), second, true), nil)
			for _, end := range []bool{true, false} { // the first stream ended, or was cut
				s := mk.fresh([]byte("first-model"))
				runStream(s, first, end)
				mk.reset(s, []byte("m2"))
				if got := randomIDs.ReplaceAll(runStream(s, second, true), nil); !bytes.Equal(got, want) {
					t.Fatalf("%s: a reset stream writes\n%s\nwant\n%s", mk.name, got, want)
				}
			}
		}
	})
}

// randomIDs matches the message id the Messages stream draws at random
// when the upstream sent none (it keeps no id between events).
var randomIDs = regexp.MustCompile(`"msg_[0-9a-z]*"`)

// runStream feeds the lines of in to s as chunks; end closes the stream
// (Done, or Fail on an error) as the relay does.
func runStream(s Stream, in []byte, end bool) []byte {
	var out []byte
	var err error
	for _, c := range bytes.Split(in, []byte("\n")) {
		if out, err = s.Chunk(out, c); err != nil {
			break
		}
	}
	if !end {
		return out
	}
	if err == nil {
		out, err = s.Done(out)
	}
	if err != nil {
		out = s.Fail(out, 502, "upstream_error", "upstream_error", err.Error())
	}
	return out
}
