package upstream

import (
	"bufio"
)

// sseDecoder relays an OpenAI-compatible SSE stream event by event, byte
// for byte.
type sseDecoder struct{}

// Next implements StreamDecoder.
func (d *sseDecoder) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	panic("not implemented yet")
}
