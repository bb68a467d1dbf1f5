package hotpath

import (
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/upstream"
)

// head is what one pass over a request's header section found (headers.go:
// the section as received, never a trailer field) of every field the hot
// path reads from it: the screen's framing and Origin checks, the client
// key, X-Gateway-Metadata, the W3C trace context and X-Request-Id. Each is
// counted, so a repeated field is still refused where it is refused, and
// its first value is kept, aliasing the section's bytes (valid while the
// request is). A
// request's head is scanned once (Handler; expectContinue, which runs
// before it, scans its own), kept on the stack and read by screenHead,
// authenticateHead and routeHead. The zero value is an empty section.
type head struct {
	// early is the first framing refusal in the section's order: an
	// obsolete line folding (a line that starts with a space or a tab) or
	// a Transfer-Encoding other than chunked; refusedNone: neither.
	early refusal
	// n* count the fields of each name; the []byte fields are the first
	// one's value, without the whitespace around it.
	nTE, nCL        int
	nOrigin         int
	origin          []byte
	nMeta           int
	meta            []byte
	nAuth, nAPIKey  int
	auth, apiKey    []byte
	nParent, nState int
	parent, state   []byte
	// clientID is the first X-Request-Id (nClientID counts them); id is
	// the id the answer carries (setRequestID), clientID or one generated
	// into idBuf.
	nClientID int
	clientID  []byte
	id        []byte
	idBuf     [requestIDLen]byte
}

// setRequestID sets the answer's X-Request-Id from the scanned section (see
// putRequestID) and keeps it in h.id.
func (h *head) setRequestID(rc *fasthttp.RequestCtx) {
	h.id = putRequestID(rc, h.clientID, &h.idBuf)
}

// scan fills h from the header section of hdr (RawHeaders), replacing
// whatever h held. It allocates nothing.
func (h *head) scan(hdr *fasthttp.RequestHeader) {
	*h = head{}
	raw := hdr.RawHeaders()
	if len(raw) == 0 {
		// No section as received: the request was built in code (tests,
		// tools), not parsed from the wire; a parsed request without a
		// single field has none either, and nothing to find. The trace
		// context and X-Request-Id have always been read through
		// fasthttp's view of the headers, which such a request does have;
		// they still are. Nothing else is: no Origin, client key or
		// metadata without a section.
		h.parent, h.nParent = peekAll(hdr, "traceparent")
		h.state, h.nState = peekAll(hdr, "tracestate")
		h.clientID, h.nClientID = peekAll(hdr, headerRequestID)
		return
	}
	s := fieldLines{raw: raw}
	for {
		line, ok := s.next()
		if !ok {
			return
		}
		if line[0] == ' ' || line[0] == '\t' {
			if h.early == refusedNone {
				h.early = refusedFolding
			}
			continue
		}
		// A cheap first look: most fields are none of these. fieldValue
		// compares the whole name, ignoring case.
		switch line[0] | 0x20 {
		case 'a':
			if v, ok := fieldValue(line, "authorization"); ok {
				first(&h.auth, &h.nAuth, v)
			}
		case 'c':
			if _, ok := fieldValue(line, "content-length"); ok {
				h.nCL++
			}
		case 'o':
			if v, ok := fieldValue(line, "origin"); ok {
				first(&h.origin, &h.nOrigin, v)
			}
		case 't':
			if v, ok := fieldValue(line, "transfer-encoding"); ok {
				// fasthttp refuses a repeated field and any coding but
				// chunked and identity; identity is refused here.
				if h.nTE++; !equalFoldLower(v, "chunked") && h.early == refusedNone {
					h.early = refusedTransferEncoding
				}
			} else if v, ok := fieldValue(line, "traceparent"); ok {
				first(&h.parent, &h.nParent, v)
			} else if v, ok := fieldValue(line, "tracestate"); ok {
				first(&h.state, &h.nState, v)
			}
		case 'x':
			if v, ok := fieldValue(line, headerMetadataLower); ok {
				first(&h.meta, &h.nMeta, v)
			} else if v, ok := fieldValue(line, "x-api-key"); ok {
				first(&h.apiKey, &h.nAPIKey, v)
			} else if v, ok := fieldValue(line, "x-request-id"); ok {
				first(&h.clientID, &h.nClientID, v)
			}
		}
	}
}

// first counts one more field of a name and keeps its value if it is the
// first.
func first(value *[]byte, n *int, v []byte) {
	if *n == 0 {
		*value = v
	}
	*n++
}

// peekAll returns the first of fasthttp's values of the header key and how
// many there are.
func peekAll(hdr *fasthttp.RequestHeader, key string) ([]byte, int) {
	all := hdr.PeekAll(key)
	if len(all) == 0 {
		return nil, 0
	}
	return all[0], len(all)
}

// trace returns the trace context to forward (upstream.TraceContext): the
// traceparent when exactly one valid one came, with the tracestate when
// exactly one well-formed one came.
func (h *head) trace() (parent, state []byte) {
	return upstream.TraceContext(only(h.parent, h.nParent), only(h.state, h.nState))
}

// only returns v when its field came exactly once (n), else nil.
func only(v []byte, n int) []byte {
	if n != 1 {
		return nil
	}
	return v
}
