package hotpath

import (
	"crypto/sha256"
	"crypto/subtle"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// The checks as they were before the one pass over the header section
// (head.scan), each walking the section itself, kept verbatim (renamed
// ref*) as the reference the differential test (head_diff_test.go)
// compares the pass with; and the wrappers the tests call, which scan the
// section once and run the check on it, as Handler does.

// screen is screenHead on rc's own header section and connection.
func screen(rc *fasthttp.RequestCtx, st *State) refusal {
	var h head
	h.scan(&rc.Request.Header)
	return screenHead(rc, st, &h, loopbackConn(rc))
}

// authenticate is authenticateHead on rc's own header section.
func authenticate(rc *fasthttp.RequestCtx, st *State, s router.Surface) (*clientKey, bool) {
	var h head
	h.scan(&rc.Request.Header)
	return authenticateHead(rc, st, s, &h)
}

// routeRequest is routeHead on rc's own header section.
func routeRequest(rc *fasthttp.RequestCtx, st *State, s router.Surface, countTokens bool, sc *scratch) bool {
	var h head
	h.scan(&rc.Request.Header)
	return routeHead(rc, st, s, countTokens, sc, &h)
}

// refTraceContext is how the walk read the trace context (through
// fasthttp's view of the headers, PeekAll), validated as it still is.
func refTraceContext(hdr *fasthttp.RequestHeader) (parent, state []byte) {
	return upstream.TraceContext(refOnlyValue(hdr, "traceparent"), refOnlyValue(hdr, "tracestate"))
}

func refOnlyValue(hdr *fasthttp.RequestHeader, key string) []byte {
	all := hdr.PeekAll(key)
	if len(all) != 1 {
		return nil
	}
	return all[0]
}

// refScreen checks the head of a request against st (nil: no configuration,
// so no allowed hosts or origins). It allocates nothing.
func refScreen(rc *fasthttp.RequestCtx, st *State) refusal {
	var origin []byte
	nOrigin, nTE, nCL := 0, 0, 0
	s := fieldLines{raw: rc.Request.Header.RawHeaders()}
	for {
		line, ok := s.next()
		if !ok {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return refusedFolding
		}
		switch line[0] | 0x20 { // a cheap first look: most fields are none of these
		case 't':
			// fasthttp refuses a repeated field and any coding but
			// chunked and identity; identity is refused here.
			if v, ok := fieldValue(line, "transfer-encoding"); ok {
				if nTE++; !equalFoldLower(v, "chunked") {
					return refusedTransferEncoding
				}
			}
		case 'c':
			if _, ok := fieldValue(line, "content-length"); ok {
				nCL++
			}
		case 'o':
			if v, ok := fieldValue(line, "origin"); ok {
				if nOrigin++; nOrigin == 1 {
					origin = v
				}
			}
		}
	}
	if nTE > 0 && nCL > 0 {
		return refusedTEAndLength
	}
	if loopbackConn(rc) && (!hostAllowed(rc.Request.Header.Host(), st) || !hostAllowed(rc.URI().Host(), st)) {
		return refusedHost
	}
	if nOrigin > 0 && (nOrigin > 1 || !originAllowed(origin, st)) {
		return refusedOrigin
	}
	return refusedNone
}

// refAuthenticate finds the client key a request presents, read once from
// the header section as received (RawHeaders, see headers.go: never a
// trailer field, and every copy of a repeated field is seen). Without auth
// it returns nil, true. Otherwise it answers 400 for a repeated
// Authorization or x-api-key header or for both carrying different keys,
// 401 invalid_api_key for a missing or unknown key, and reports false; the
// key never appears in an answer. Allocation-free on success.
func refAuthenticate(rc *fasthttp.RequestCtx, st *State, s router.Surface) (*clientKey, bool) {
	if st.keys == nil {
		return nil, true
	}
	var bearer, apiKey []byte
	nAuth, nAPIKey := 0, 0
	badScheme := false
	lines := fieldLines{raw: rc.Request.Header.RawHeaders()}
	for {
		line, more := lines.next()
		if !more {
			break
		}
		if v, ok := fieldValue(line, "authorization"); ok {
			nAuth++
			tok, ok := bearerToken(v)
			bearer, badScheme = tok, !ok
		} else if v, ok := fieldValue(line, "x-api-key"); ok {
			nAPIKey++
			apiKey = v
		}
	}
	switch {
	case nAuth > 1 || nAPIKey > 1:
		writeAuthError(rc, s, fasthttp.StatusBadRequest,
			"the Authorization or x-api-key header is repeated; send the client key once",
			upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
		return nil, false
	case badScheme:
		writeAuthError(rc, s, fasthttp.StatusUnauthorized,
			"the Authorization header is not \"Bearer <key>\"; send the client key as Authorization: Bearer <key> or x-api-key: <key>",
			upstream.TypeInvalidRequest, codeInvalidAPIKey)
		return nil, false
	case nAuth == 1 && nAPIKey == 1 && subtle.ConstantTimeCompare(bearer, apiKey) != 1:
		writeAuthError(rc, s, fasthttp.StatusBadRequest,
			"the Authorization and x-api-key headers carry different keys; send one client key",
			upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
		return nil, false
	}
	tok := bearer
	if nAuth == 0 {
		tok = apiKey
	}
	if len(tok) == 0 {
		writeAuthError(rc, s, fasthttp.StatusUnauthorized,
			"no client key; send it as Authorization: Bearer <key> or x-api-key: <key>",
			upstream.TypeInvalidRequest, codeInvalidAPIKey)
		return nil, false
	}
	// A map lookup by digest: what a timing difference could reveal is a
	// digest prefix, which says nothing useful about any key.
	k := st.keys[sha256.Sum256(tok)]
	if k == nil {
		writeAuthError(rc, s, fasthttp.StatusUnauthorized, "the client key is not valid",
			upstream.TypeInvalidRequest, codeInvalidAPIKey)
		return nil, false
	}
	return k, true
}

// headerField returns the value of the first field called name (lowercase)
// in the header section raw, and how many fields of that name it holds.
func headerField(raw []byte, name string) (value []byte, n int) {
	s := fieldLines{raw: raw}
	for {
		line, ok := s.next()
		if !ok {
			return value, n
		}
		if v, ok := fieldValue(line, name); ok {
			if n == 0 {
				value = v
			}
			n++
		}
	}
}
