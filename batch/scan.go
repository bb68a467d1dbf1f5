package batch

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/upstream"
)

// Reading an upload as it arrives: every byte goes to the spool, and the
// requests are cut out of the stream and handed over one at a time, so
// that at most one request (up to max_request_bytes) is in memory.

// readChunk is how much of an upload is read at a time.
const readChunk = 64 << 10

// tooLarge is a Refusal for an upload over its limit.
func tooLarge(msg string) *hotpath.Refusal {
	return &hotpath.Refusal{Status: fasthttp.StatusRequestEntityTooLarge, Type: upstream.TypeInvalidRequest,
		Code: upstream.CodeRequestTooLarge, Message: msg}
}

// spoolLines copies r to sp and calls each with every line of it (1-based
// number n, without its newline, and where it starts in the spool). A line
// over maxLine bytes is 413 naming it; the whole over maxFile is 413; an
// empty line (but for a last newline) is 400. An error of r or of the
// spool is returned as is.
func spoolLines(r io.Reader, sp *spool, maxLine int, maxFile int64, each func(n int, line []byte, at int64) *hotpath.Refusal) (*hotpath.Refusal, error) {
	buf := make([]byte, readChunk)
	var (
		pending []byte // the start of a line cut by a read
		n       int    // lines seen
		at      int64  // where the current line starts
		off     int64  // bytes read
	)
	emit := func(line []byte) *hotpath.Refusal {
		n++
		if len(line) > maxLine {
			return tooLarge(fmt.Sprintf("line %d is over %d bytes (server.max_request_bytes); a request in a batch is held to the limit of one sent alone", n, maxLine))
		}
		if len(bytes.TrimSpace(line)) == 0 {
			return &hotpath.Refusal{Status: fasthttp.StatusBadRequest, Type: upstream.TypeInvalidRequest, Code: upstream.CodeInvalidRequest,
				Message: fmt.Sprintf("line %d is empty; a batch file holds one request per line", n)}
		}
		return each(n, line, at)
	}
	for {
		k, err := r.Read(buf)
		if k > 0 {
			chunk := buf[:k]
			if off+int64(k) > maxFile {
				return tooLarge(fmt.Sprintf("the file is over %d bytes (server.max_batch_file_bytes)", maxFile)), nil
			}
			if _, werr := sp.Write(chunk); werr != nil {
				return nil, werr
			}
			pos := off // where chunk[0] lies in the spool
			off += int64(k)
			for len(chunk) > 0 {
				i := bytes.IndexByte(chunk, '\n')
				if i < 0 {
					if len(pending)+len(chunk) > maxLine+1 {
						n++ // too long already: it is not read further
						return tooLarge(fmt.Sprintf("line %d is over %d bytes (server.max_request_bytes); a request in a batch is held to the limit of one sent alone", n, maxLine)), nil
					}
					pending = append(pending, chunk...)
					break
				}
				line := chunk[:i]
				if len(pending) > 0 {
					pending = append(pending, line...)
					line = pending
				}
				if ref := emit(line); ref != nil {
					return ref, nil
				}
				pending = pending[:0]
				pos += int64(i + 1)
				at = pos
				chunk = chunk[i+1:]
			}
		}
		if errors.Is(err, io.EOF) {
			if len(pending) > 0 {
				if ref := emit(pending); ref != nil {
					return ref, nil
				}
			}
			if n == 0 {
				return &hotpath.Refusal{Status: fasthttp.StatusBadRequest, Type: upstream.TypeInvalidRequest,
					Code: upstream.CodeInvalidRequest, Message: "the file is empty; a batch file holds one request per line"}, nil
			}
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// The states of spoolRequests' reader.
const (
	sOpen      = iota // before the body's '{'
	sKey              // before the key
	sKeyText          // inside the key
	sColon            // before ':'
	sArray            // before '['
	sFirst            // before the first element or ']'
	sElem             // inside an element
	sAfterElem        // before ',' or ']'
	sNext             // before an element (after ',')
	sClose            // before the body's '}'
	sEnd              // after it: whitespace only
)

// spoolRequests copies r, a message batch's body, to sp and calls each
// with every element of its requests array (0-based index i, its bytes and
// where they start in the spool). The body must be {"requests": [...]}
// and nothing else: the key written exactly so, once. An element over
// maxElem bytes is 413 naming it, the body over maxBody 413, anything
// else malformed 400.
func spoolRequests(r io.Reader, sp *spool, maxElem int, maxBody int64, each func(i int, elem []byte, at int64) *hotpath.Refusal) (*hotpath.Refusal, error) {
	bad := func(msg string) *hotpath.Refusal {
		return &hotpath.Refusal{Status: fasthttp.StatusBadRequest, Type: upstream.TypeInvalidRequest,
			Code: upstream.CodeInvalidRequest, Message: "the message batch is not " + `{"requests": [...]}: ` + msg}
	}
	buf := make([]byte, readChunk)
	var (
		state    = sOpen
		key      []byte
		elem     []byte
		elemAt   int64
		i        int
		depth    int
		inStr    bool
		esc      bool
		off      int64
		finished bool
	)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if off+int64(k) > maxBody {
				return tooLarge(fmt.Sprintf("the message batch is over %d bytes (server.max_batch_file_bytes)", maxBody)), nil
			}
			if _, werr := sp.Write(buf[:k]); werr != nil {
				return nil, werr
			}
			for j, c := range buf[:k] {
				pos := off + int64(j)
				ws := c == ' ' || c == '\t' || c == '\n' || c == '\r'
				switch state {
				case sElem:
					if len(elem) >= maxElem {
						return tooLarge(fmt.Sprintf("requests[%d] is over %d bytes (server.max_request_bytes); a request in a batch is held to the limit of one sent alone", i, maxElem)), nil
					}
					elem = append(elem, c)
					switch {
					case esc:
						esc = false
					case inStr:
						if c == '\\' {
							esc = true
						} else if c == '"' {
							inStr = false
						}
					case c == '"':
						inStr = true
					case c == '{' || c == '[':
						depth++
					case c == '}' || c == ']':
						if depth--; depth == 0 {
							if ref := each(i, elem, elemAt); ref != nil {
								return ref, nil
							}
							i++
							elem = elem[:0]
							state = sAfterElem
						}
					}
					continue
				case sKeyText:
					if c == '"' {
						if string(key) != "requests" {
							return bad(fmt.Sprintf("it has the key %q; a message batch has requests only", key)), nil
						}
						state = sColon
					} else if len(key) >= 32 {
						return bad("it has a key other than requests"), nil
					} else {
						key = append(key, c)
					}
					continue
				}
				if ws {
					continue
				}
				switch {
				case state == sOpen && c == '{':
					state = sKey
				case state == sKey && c == '"':
					state = sKeyText
				case state == sColon && c == ':':
					state = sArray
				case state == sArray && c == '[':
					state = sFirst
				case (state == sFirst || state == sNext) && c == '{':
					state, depth, inStr, esc, elemAt = sElem, 1, false, false, pos
					elem = append(elem[:0], c)
				case state == sFirst && c == ']', state == sAfterElem && c == ']':
					state = sClose
				case state == sAfterElem && c == ',':
					state = sNext
				case state == sClose && c == '}':
					state, finished = sEnd, true
				case state == sKey && c == '}':
					return bad("it has no requests"), nil
				case state == sClose && c == ',':
					return bad("it has a key besides requests"), nil
				default:
					return bad(fmt.Sprintf("%q at offset %d", c, pos)), nil
				}
			}
			off += int64(k)
		}
		if errors.Is(err, io.EOF) {
			if !finished {
				return bad("it ends early"), nil
			}
			if i == 0 {
				return bad("requests is empty"), nil
			}
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
