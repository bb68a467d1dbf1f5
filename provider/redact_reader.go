package provider

import "io"

// A redacting reader: Redact over a stream of any length (a file's content
// or a message batch's results relayed to a client), holding back only
// what could be the start of an occurrence cut by a read.

// redactChunk is how much of the source one refill reads.
const redactChunk = 32 << 10

// RedactReader returns r with every occurrence of secrets replaced as
// Redact does; r itself when there are none. An occurrence cut between two
// reads of r is found: the last bytes that could start one (at most the
// longest escaped form of a secret) are held back until more arrive.
func RedactReader(r io.Reader, secrets []Secret) io.Reader {
	if len(secrets) == 0 {
		return r
	}
	longest := 0
	for i := range secrets {
		// Each byte of a secret is at most a six-byte \u escape.
		longest = max(longest, 6*len(secrets[i].value))
	}
	return &redactReader{r: r, secrets: secrets, hold: longest - 1}
}

type redactReader struct {
	r       io.Reader
	secrets []Secret
	hold    int    // bytes held back: an occurrence cut at the end starts within them
	pending []byte // read, redacted of every whole occurrence, not yet released
	out     []byte // released, not yet read (a view of outBuf)
	outBuf  []byte
	err     error // r's error, returned once everything read is released and read
}

func (z *redactReader) Read(p []byte) (int, error) {
	for len(z.out) == 0 {
		if z.err != nil {
			return 0, z.err // pending was released with the error
		}
		if cap(z.pending)-len(z.pending) < redactChunk {
			grown := make([]byte, len(z.pending), len(z.pending)+redactChunk+z.hold)
			copy(grown, z.pending)
			z.pending = grown
		}
		n, err := z.r.Read(z.pending[len(z.pending):cap(z.pending)])
		z.pending = z.pending[:len(z.pending)+n]
		z.err = err
		red := Redact(z.pending, z.secrets)
		cut := len(red) - z.hold
		if z.err != nil {
			cut = len(red)
		}
		if cut <= 0 {
			z.pending = red
			continue
		}
		// Released bytes are copied out before the held ones move to the
		// front: red may be pending itself.
		z.outBuf = append(z.outBuf[:0], red[:cut]...)
		z.out = z.outBuf
		z.pending = append(z.pending[:0], red[cut:]...)
	}
	n := copy(p, z.out)
	z.out = z.out[n:]
	return n, nil
}
