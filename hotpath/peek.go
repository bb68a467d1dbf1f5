package hotpath

import (
	"errors"
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/jsonscan"
	"github.com/switchyard/switchyard/router"
)

// peek is what routing reads of a request body (docs/routing.md, 1): model, user,
// stream and whether tools is non-empty, and nothing else. The body itself
// is forwarded untouched.
//
// A peek lives in a pooled per-request scratch and is not safe for
// concurrent use. Model and User are copies in the peek's own buffers,
// valid until the next parse or release; nothing of the request is kept
// after release.
type peek struct {
	// modelBuf, userBuf and prevBuf hold Model, User and Previous.
	modelBuf, userBuf, prevBuf []byte

	// Model is the "model" string, unescaped; never empty after a
	// successful parse. ModelAt and ModelEnd are where its literal, quotes
	// included, lies in the body parsed (for a rewrite of the model inside
	// a stored batch: see LineRouter).
	Model             []byte
	ModelAt, ModelEnd int
	// User is the "user" string (on the messages surface, the
	// "metadata.user_id" string); HasUser is false when the body has none.
	User    []byte
	HasUser bool
	// Stream is the "stream" boolean (absent = false).
	Stream bool
	// HasTools is true when "tools" is a non-empty array.
	HasTools bool
	// Previous is the "previous_response_id" string, unescaped, on the
	// responses surface (nil when absent or null): the response whose
	// owner the request must be (docs/residency.md). It is read here,
	// once and exactly as an upstream's decoder reads it, so that no
	// escaped, repeated or case-folded copy reaches the upstream unchecked.
	Previous []byte

	// seen holds a seen* bit for every routing key met so far.
	seen uint8
}

// Bits of peek.seen, one per routing key.
const (
	seenModel uint8 = 1 << iota
	seenUser
	seenStream
	seenTools
	seenMetadata // messages surface: the object holding user_id
	seenUserID   // messages surface: metadata.user_id
	seenPrevious // responses surface: previous_response_id
)

// routingKey is a key the peek routes on, with its seen* bit.
type routingKey struct {
	name string
	bit  uint8
}

// The routing keys of each object the peek reads: the body's top level on
// chat-shaped surfaces, on the responses surface (with the id whose owner
// is checked), on the messages surface (where the user is metadata.user_id
// and a top-level "user" is just another member), and the messages
// surface's metadata object.
var (
	chatKeys      = [...]routingKey{{"model", seenModel}, {"user", seenUser}, {"stream", seenStream}, {"tools", seenTools}}
	responsesKeys = [...]routingKey{{"model", seenModel}, {"user", seenUser}, {"stream", seenStream}, {"tools", seenTools},
		{"previous_response_id", seenPrevious}}
	messagesKeys = [...]routingKey{{"model", seenModel}, {"stream", seenStream}, {"tools", seenTools}, {"metadata", seenMetadata}}
	metadataKeys = [...]routingKey{{"user_id", seenUserID}}
)

// maxBodyDepth is the deepest nesting of arrays and objects a body may
// have: fastjson's own parser limit (fastjson.MaxDepth), which the
// translating adapters parse bodies with.
const maxBodyDepth = fastjson.MaxDepth

var (
	errEmptyBody = errors.New("request body is empty; want a JSON object with a \"model\" field")
	errTooDeep   = fmt.Errorf("request body is not valid JSON: arrays and objects are nested more than %d deep", maxBodyDepth)
	errNoModel   = errors.New(`request body has no "model"; it must name the model as a string`)
)

// parse reads body's routing fields in one pass without recursion. The
// body must be exactly one JSON object (whitespace around it allowed) with
// a non-empty string "model"; "stream" absent or boolean; "user" absent or
// a string; "tools" absent, null or an array. With messages (the messages
// surface) the user is the string "user_id" of the object "metadata"
// (absent or null: none) instead of "user". A routing key present twice,
// or a key equal to one only under case folding (as encoding/json matches
// keys), is refused: the upstream might act on the other copy.
//
// Of the values not routed on only the structure is checked (docs/routing.md, 1):
// strings terminated, brackets balanced and nested at most maxBodyDepth
// deep, top-level scalars well-formed. Strings are skipped with a
// vectorized search for their closing quote. Every error message is meant
// for the client as a 400 invalid_request. A successful parse allocates
// nothing once the peek is warm.
func (p *peek) parse(body []byte, messages bool) error {
	keys := chatKeys[:]
	if messages {
		keys = messagesKeys[:]
	}
	return p.parseKeys(body, keys)
}

// parseFor is parse for a request of surface s: on the responses surface
// it also reads "previous_response_id" (Previous), absent, null or a
// string, under the routing keys' rules (once, spelled exactly).
func (p *peek) parseFor(body []byte, s router.Surface) error {
	switch s {
	case router.SurfaceMessages:
		return p.parseKeys(body, messagesKeys[:])
	case router.SurfaceResponses:
		return p.parseKeys(body, responsesKeys[:])
	}
	return p.parseKeys(body, chatKeys[:])
}

func (p *peek) parseKeys(body []byte, keys []routingKey) error {
	p.Model, p.User, p.Previous = nil, nil, nil
	p.HasUser, p.Stream, p.HasTools = false, false, false
	p.seen = 0

	if len(body) == 0 {
		return errEmptyBody
	}
	i := jsonscan.SkipSpace(body, 0)
	if i == len(body) {
		return syntaxError(body, i, "a JSON object")
	}
	if c := body[i]; c != '{' {
		if !startsValue(c) {
			return syntaxError(body, i, "a JSON object")
		}
		return fmt.Errorf("request body must be a JSON object, not %s", router.JSONTypeName(typeOf(c)))
	}
	i, err := p.object(body, i, keys, 1)
	if err != nil {
		return err
	}
	if i = jsonscan.SkipSpace(body, i); i != len(body) {
		return syntaxError(body, i, "the end of the body after its object")
	}
	if p.Model == nil {
		return errNoModel
	}
	return nil
}

// object reads the members of the object that opens at b[i], whose values
// are nested depth deep (1 for the body's own members), taking the values
// of keys and skipping the others. It returns the index past the closing
// brace.
func (p *peek) object(b []byte, i int, keys []routingKey, depth int) (int, error) {
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, syntaxError(b, i, "a key")
		}
		end := jsonscan.StringEnd(b, i)
		if end >= len(b) {
			return i, errUnterminated
		}
		key := b[i+1 : end]
		if i = jsonscan.SkipSpace(b, end+1); i >= len(b) || b[i] != ':' {
			return i, syntaxError(b, i, "':'")
		}
		if i = jsonscan.SkipSpace(b, i+1); i >= len(b) {
			return i, syntaxError(b, i, "a value")
		}
		k, exact, err := matchKey(key, keys)
		switch {
		case err != nil:
			return i, err
		case k == nil:
			i, err = skipValue(b, i, depth)
		case !exact:
			return i, fmt.Errorf("%s has the key %q, which a case-insensitive JSON decoder reads as %q; send %q exactly, once",
				objectName(depth), key, k.name, k.name)
		case p.seen&k.bit != 0:
			return i, fmt.Errorf("%s has %q twice", objectName(depth), k.name)
		default:
			p.seen |= k.bit
			i, err = p.take(k.bit, b, i, depth)
		}
		if err != nil {
			return i, err
		}
		if i = jsonscan.SkipSpace(b, i); i < len(b) {
			switch b[i] {
			case ',':
				i = jsonscan.SkipSpace(b, i+1)
				continue
			case '}':
				return i + 1, nil
			}
		}
		return i, syntaxError(b, i, "',' or '}'")
	}
}

// objectName names, in an error message, the object whose members are
// depth deep.
func objectName(depth int) string {
	if depth == 1 {
		return "request body"
	}
	return `"metadata"`
}

// take reads the value of the routing key bit starting at b[i] and returns
// the index past it.
func (p *peek) take(bit uint8, b []byte, i, depth int) (int, error) {
	c := b[i]
	if !startsValue(c) {
		return i, syntaxError(b, i, "a value")
	}
	t := typeOf(c)
	switch bit {
	case seenModel:
		if t != fastjson.TypeString {
			return i, fmt.Errorf(`"model" must be a string, not %s`, router.JSONTypeName(t))
		}
		end, buf, err := readString(b, i, p.modelBuf[:0], "model")
		p.modelBuf, p.Model = buf, buf
		p.ModelAt, p.ModelEnd = i, end
		if err == nil && len(p.Model) == 0 {
			err = errors.New(`"model" must not be empty`)
		}
		return end, err
	case seenUser, seenUserID:
		name := "user"
		if bit == seenUserID {
			name = "metadata.user_id"
			if t == fastjson.TypeNull {
				return literalEnd(b, i)
			}
		}
		if t != fastjson.TypeString {
			return i, fmt.Errorf(`%q must be a string, not %s`, name, router.JSONTypeName(t))
		}
		end, buf, err := readString(b, i, p.userBuf[:0], name)
		p.userBuf, p.User, p.HasUser = buf, buf, true
		return end, err
	case seenPrevious:
		if t == fastjson.TypeNull {
			return literalEnd(b, i)
		}
		if t != fastjson.TypeString {
			return i, fmt.Errorf(`"previous_response_id" must be a string, not %s`, router.JSONTypeName(t))
		}
		end, buf, err := readString(b, i, p.prevBuf[:0], "previous_response_id")
		p.prevBuf, p.Previous = buf, buf
		return end, err
	case seenStream:
		switch t {
		case fastjson.TypeTrue:
			p.Stream = true
		case fastjson.TypeFalse:
		default:
			return i, fmt.Errorf(`"stream" must be a boolean, not %s`, router.JSONTypeName(t))
		}
		return literalEnd(b, i)
	case seenTools:
		switch t {
		case fastjson.TypeNull:
			return literalEnd(b, i)
		case fastjson.TypeArray:
			j := jsonscan.SkipSpace(b, i+1)
			p.HasTools = j < len(b) && b[j] != ']'
			return skipNested(b, i, depth)
		}
		return i, fmt.Errorf(`"tools" must be an array, not %s`, router.JSONTypeName(t))
	case seenMetadata:
		switch t {
		case fastjson.TypeNull:
			return literalEnd(b, i)
		case fastjson.TypeObject:
			if depth >= maxBodyDepth {
				return i, errTooDeep
			}
			return p.object(b, i, metadataKeys[:], depth+1)
		}
		return i, fmt.Errorf(`"metadata" must be an object, not %s`, router.JSONTypeName(t))
	}
	panic("BUG: peek.take of an unknown key")
}

// readString reads the routed string literal that opens at b[i] into dst,
// unescaped, and returns the index past it. Unlike the strings the peek
// skips, it must be valid JSON and valid UTF-8, so it means the same to
// every decoder (encoding/json would turn bad bytes into U+FFFD).
func readString(b []byte, i int, dst []byte, name string) (int, []byte, error) {
	end := jsonscan.StringEnd(b, i)
	if end >= len(b) {
		return end, dst, errUnterminated
	}
	dst, ok := appendString(dst, b[i+1:end])
	if !ok {
		return end, dst, fmt.Errorf("%q must be a valid JSON string of UTF-8 text (valid escapes, no control characters)", name)
	}
	return end + 1, dst, nil
}

// literalEnd returns the index past the literal true, false or null that
// starts at b[i], or a syntax error when it is not one.
func literalEnd(b []byte, i int) (int, error) {
	end := scalarEnd(b, i)
	switch string(b[i:end]) {
	case "true", "false", "null":
		return end, nil
	}
	return i, syntaxError(b, i, "true, false or null")
}

// maxKeptBuffer is the largest model/user buffer a pooled peek keeps
// between requests; a larger one (a client may send a megabyte "user") is
// dropped at release.
const maxKeptBuffer = 4 << 10

// release forgets the request: the field slices, and buffers a large
// field grew.
func (p *peek) release() {
	p.Model, p.User, p.Previous = nil, nil, nil
	if cap(p.modelBuf) > maxKeptBuffer || cap(p.userBuf) > maxKeptBuffer || cap(p.prevBuf) > maxKeptBuffer {
		p.modelBuf, p.userBuf, p.prevBuf = nil, nil, nil
	}
}

// typeOf is the JSON type of the value starting with byte c.
func typeOf(c byte) fastjson.Type {
	switch c {
	case '{':
		return fastjson.TypeObject
	case '[':
		return fastjson.TypeArray
	case '"':
		return fastjson.TypeString
	case 't':
		return fastjson.TypeTrue
	case 'f':
		return fastjson.TypeFalse
	case 'n':
		return fastjson.TypeNull
	}
	return fastjson.TypeNumber
}

// startsValue reports whether a JSON value may start with byte c.
func startsValue(c byte) bool {
	switch c {
	case '{', '[', '"', 't', 'f', 'n', '-':
		return true
	}
	return '0' <= c && c <= '9'
}
