//go:build !race

package hotpath

import (
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"
)

// A streamed body larger than a scratch keeps is read into a buffer of its
// size class that an earlier large body left in the pool: no growth by
// doubling (one read fills it), no allocation, whatever the size; and the bytes are the body's.
func TestLargeBodiesReuseBuffers(t *testing.T) {
	for _, size := range []int{100, 16 << 10, 300 << 10, 1 << 20, 3<<20 + 5} {
		body := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		r := &countingReader{r: bytes.NewReader(body)}
		var rc fasthttp.RequestCtx
		sc := &scratch{}
		var err error
		var got []byte
		run := func() {
			r.r.Reset(body)
			r.reads = 0
			rc.Request.SetBodyStream(r, len(body))
			got, err = readBody(&rc, 10<<20, &sc.body)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("size %d: %v, %d bytes read", size, err, len(got))
			}
			// As releaseScratch does.
			if cap(sc.body.b) > maxKeptBody {
				putBody(sc.body)
				sc.body = nil
			}
		}
		run() // the first body of its size grows a buffer
		sc.body = getBody(4<<10, true)
		if n := testing.AllocsPerRun(20, run); n != 0 {
			t.Errorf("size %d: %v allocations per body, want 0", size, n)
		}
		// One read fills the buffer, one sees the end: it did not grow.
		if r.reads > 2 {
			t.Errorf("size %d: %d reads into the buffer, want 2", size, r.reads)
		}
	}
}

// countingReader counts the reads made of it.
type countingReader struct {
	r     *bytes.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}
