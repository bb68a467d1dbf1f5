package hotpath

import (
	"crypto/sha256"
	"crypto/subtle"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// Client keys (docs/client-keys.md). With an auth block every API request and GET
// /v1/models presents a key; the key, not the client's claim, decides the
// user and the bound metadata entries routing sees, and which models it may
// ask for. The keys of a State are a map from the key's SHA-256 to what it
// binds, built with the State and never changed: a lookup is one hash of
// the presented key and one map read, with no lock and no allocation.

// Error codes of the client key checks.
const (
	codeInvalidAPIKey   = "invalid_api_key"
	codeModelNotAllowed = "model_not_allowed"
)

// clientKey is one configured key as the hot path holds it: never the key
// itself, only what it binds.
type clientKey struct {
	spec  router.KeySpec // name, bound user and metadata, allow-list
	allow router.ModelSet
	// models is the prebuilt GET /v1/models answer for this key.
	models []byte
	// fence is the key's residency guard; nil = none.
	fence *upstream.Fence
}

// keyring maps a key's SHA-256 to the key. nil: no auth block, the
// gateway is open.
type keyring map[[sha256.Size]byte]*clientKey

// buildKeys compiles cfg's client keys against snap: nil without an auth
// block. Keys whose bindings and allow-list route alike share one
// /v1/models body, so 10,000 tenants bound to users no rule names cost one.
func buildKeys(cfg *config.Config, snap *router.Snapshot) keyring {
	specs := cfg.KeySpecs()
	if len(specs) == 0 {
		return nil
	}
	ring := make(keyring, len(specs))
	bodies := map[string][]byte{}
	allows := map[string]router.ModelSet{} // keys with one allow-list share its compiled set
	for i := range specs {
		k := &clientKey{spec: specs[i]}
		list := "*"
		if k.spec.Models != nil {
			q := make([]string, len(k.spec.Models))
			for j, m := range k.spec.Models {
				q[j] = strconv.Quote(m)
			}
			list = strings.Join(q, ",")
		}
		allow, ok := allows[list]
		if !ok {
			allow = router.NewModelSet(k.spec.Models)
			allows[list] = allow
		}
		k.allow = allow
		sig := snap.IdentityKey(&k.spec)
		body, ok := bodies[sig]
		if !ok {
			body = appendModels(nil, snap.ModelsFor(&k.spec), snap.Created())
			bodies[sig] = body
		}
		k.models = body
		k.fence = fenceFor(cfg, &cfg.Auth.Keys[i])
		ring[cfg.Auth.Keys[i].Digest] = k
	}
	return ring
}

// authenticateHead finds the client key a request presents, read from its
// header section h (head.scan: never a trailer field, and every copy of a
// repeated field is counted). Without auth it returns nil, true. Otherwise
// it answers the refusal checkKey finds (400 or 401 invalid_api_key) and
// reports false; the key never appears in an answer. Allocation-free on
// success.
func authenticateHead(rc *fasthttp.RequestCtx, st *State, s router.Surface, h *head) (*clientKey, bool) {
	k, v := checkKey(st, h)
	if v == keyOK {
		return k, true
	}
	writeKeyRefusal(rc, s, v)
	return nil, false
}

// keyVerdict is what checkKey decided of the key a request presents.
type keyVerdict uint8

const (
	keyOK          keyVerdict = iota // a configured key, or no auth block
	keyRepeated                      // Authorization or x-api-key sent twice: 400
	keyBadScheme                     // Authorization not "Bearer <key>": 401
	keyConflicting                   // Authorization and x-api-key differ: 400
	keyMissing                       // no key: 401
	keyUnknown                       // not a configured key: 401
)

// checkKey decides, from the header section h alone, whether the request
// presents one of st's client keys (any request does without an auth
// block), and which one. It writes nothing and allocates nothing, so the
// server's HeaderReceived can call it before the body is read.
func checkKey(st *State, h *head) (*clientKey, keyVerdict) {
	if st.keys == nil {
		return nil, keyOK
	}
	nAuth, nAPIKey, apiKey := h.nAuth, h.nAPIKey, h.apiKey
	var bearer []byte
	badScheme := false
	if nAuth > 0 {
		tok, ok := bearerToken(h.auth)
		bearer, badScheme = tok, !ok
	}
	switch {
	case nAuth > 1 || nAPIKey > 1:
		return nil, keyRepeated
	case badScheme:
		return nil, keyBadScheme
	case nAuth == 1 && nAPIKey == 1 && subtle.ConstantTimeCompare(bearer, apiKey) != 1:
		return nil, keyConflicting
	}
	tok := bearer
	if nAuth == 0 {
		tok = apiKey
	}
	if len(tok) == 0 {
		return nil, keyMissing
	}
	// A map lookup by digest: what a timing difference could reveal is a
	// digest prefix, which says nothing useful about any key.
	k := st.keys[sha256.Sum256(tok)]
	if k == nil {
		return nil, keyUnknown
	}
	return k, keyOK
}

// writeKeyRefusal answers a request checkKey refused with verdict v.
func writeKeyRefusal(rc *fasthttp.RequestCtx, s router.Surface, v keyVerdict) {
	switch v {
	case keyRepeated:
		writeAuthError(rc, s, fasthttp.StatusBadRequest,
			"the Authorization or x-api-key header is repeated; send the client key once",
			upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
	case keyBadScheme:
		writeAuthError(rc, s, fasthttp.StatusUnauthorized,
			"the Authorization header is not \"Bearer <key>\"; send the client key as Authorization: Bearer <key> or x-api-key: <key>",
			upstream.TypeInvalidRequest, codeInvalidAPIKey)
	case keyConflicting:
		writeAuthError(rc, s, fasthttp.StatusBadRequest,
			"the Authorization and x-api-key headers carry different keys; send one client key",
			upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
	case keyMissing:
		writeAuthError(rc, s, fasthttp.StatusUnauthorized,
			"no client key; send it as Authorization: Bearer <key> or x-api-key: <key>",
			upstream.TypeInvalidRequest, codeInvalidAPIKey)
	case keyUnknown:
		writeAuthError(rc, s, fasthttp.StatusUnauthorized, "the client key is not valid",
			upstream.TypeInvalidRequest, codeInvalidAPIKey)
	default:
		panic("BUG: hotpath: writeKeyRefusal without a refusal")
	}
}

// bearerToken returns the credentials of an "Bearer <token>" Authorization
// value (scheme case-insensitive, RFC 9110 §11.1); ok is false for another
// scheme. The token may be empty.
func bearerToken(v []byte) (tok []byte, ok bool) {
	const scheme = "bearer"
	if len(v) < len(scheme) || !equalFoldLower(v[:len(scheme)], scheme) {
		return nil, false
	}
	rest := v[len(scheme):]
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
		return nil, false // "Bearerx ..."
	}
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		rest = rest[1:]
	}
	for len(rest) > 0 && (rest[len(rest)-1] == ' ' || rest[len(rest)-1] == '\t') {
		rest = rest[:len(rest)-1]
	}
	return rest, true
}

// keyAllows answers 403 model_not_allowed and reports false when k's
// allow-list refuses model (before routing, whether or not it would route).
// A nil k (no auth) allows everything.
func keyAllows(rc *fasthttp.RequestCtx, k *clientKey, s router.Surface, model []byte) bool {
	if k == nil || k.allow.Has(model) {
		return true
	}
	writeAuthError(rc, s, fasthttp.StatusForbidden,
		"model "+strconv.Quote(string(model))+" is not allowed for this client key",
		upstream.TypeInvalidRequest, codeModelNotAllowed)
	return false
}

// bindKey applies k's bindings to req (see router.Bind), merging metadata
// into sc's pair buffer. A nil k (no auth) changes nothing.
func bindKey(req *router.Request, k *clientKey, sc *scratch) {
	if k != nil {
		sc.pairs = router.Bind(req, &k.spec, sc.pairs)
	}
}

// keyName is the name of k for records; "" without auth.
func keyName(k *clientKey) string {
	if k == nil {
		return ""
	}
	return k.spec.Name
}

// writeAuthError writes every answer of the client key checks: 400, 401
// invalid_api_key and 403 model_not_allowed. s is the request's surface
// (GET /v1/models passes router.SurfaceChat: it answers in OpenAI's shape
// for every client); the messages surface answers in Anthropic's envelope,
// type authentication_error (401) or permission_error (403).
func writeAuthError(rc *fasthttp.RequestCtx, s router.Surface, status int, msg, typ, code string) {
	if status == fasthttp.StatusUnauthorized {
		rc.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="switchyard"`)
	}
	writeSurfaceError(rc, s, status, msg, typ, code)
}
