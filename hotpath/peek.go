package hotpath

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
)

// peek is what routing reads of a request body (SPEC §4.1): the four fields
// model, user, stream and tools, and nothing else; on the messages surface
// the user is metadata.user_id (SPEC §3). The body itself is forwarded
// untouched.
//
// A peek lives in a pooled per-request scratch and is not safe for
// concurrent use. Model and User are copies in the peek's own buffers,
// valid until the next parse or release; nothing of the request is kept
// after release.
type peek struct {
	// json unescapes the rare key or string value that holds a backslash.
	json fastjson.Parser
	// modelBuf and userBuf hold Model and User when they had to be
	// unescaped.
	modelBuf, userBuf []byte

	// Model is the "model" string, unescaped; never empty after a
	// successful parse.
	Model []byte
	// User is the "user" string (messages: "metadata"."user_id"); HasUser
	// is false when the body has none (or it is null, on messages).
	User    []byte
	HasUser bool
	// Stream is the "stream" boolean (absent = false).
	Stream bool
	// HasTools is true when "tools" is a non-empty array.
	HasTools bool

	// fields are the top-level entries for the four keys, in body order:
	// at most one per key, plus the first repeat, which is refused.
	fields  [5]field
	nfields int
	seen    uint8
	// messages: the body is a Messages API request (see parse).
	messages bool
}

// field is one top-level entry the peek routes on: which key (a seen* bit)
// and its value's raw bytes.
type field struct {
	bit uint8
	val []byte
}

// Bits of peek.seen.
const (
	seenModel uint8 = 1 << iota
	seenUser
	seenStream
	seenTools
	seenMetadata
)

// maxBodyDepth is the deepest nesting of arrays and objects a body may
// have: fastjson's own parser limit (fastjson.MaxDepth), which the
// translating adapters parse bodies with.
const maxBodyDepth = fastjson.MaxDepth

var (
	errEmptyBody = errors.New("request body is empty; want a JSON object with a \"model\" field")
	errTooDeep   = fmt.Errorf("request body is not valid JSON: arrays and objects are nested more than %d deep", maxBodyDepth)
)

// parse reads body's routing fields. The body must be exactly one JSON
// object (whitespace around it allowed, nothing else after it) with a
// non-empty string "model"; "stream" absent or boolean; "user" absent or a
// string; "tools" absent, null or an array; arrays and objects nested at
// most maxBodyDepth deep. A key that names one of the four fields twice is
// refused: the gateway would route on one reading while the upstream might
// act on the other.
//
// It makes two passes over the body. The first (scan) finds the four
// fields' values at the top level and measures the nesting depth without
// recursion, skipping strings with a vectorized byte search; the second is
// fastjson.Validate, strict JSON, which recurses once per level, so it only
// runs on a body the first pass found shallow enough (a 10 MiB body of "["
// would otherwise overflow the goroutine's stack, a fatal error). No JSON
// tree is built, and the body is not copied: about 15% cheaper than
// Validate plus a fastjson.Parser tree, 1.3 -> 1.1 us on a 1.2 KB chat body
// and 13.0 -> 11.2 us on a 90 KB conversation (BenchmarkPeek*,
// BenchmarkPeekReference*).
//
// With messages (a Messages API body), User and HasUser come from the
// top-level "metadata" object's "user_id" string instead of "user", which
// is then not a routing field: metadata absent or null, or no user_id or a
// null one, is no user; metadata not an object, user_id not a string, or
// either key twice is refused.
//
// Every error message is meant for the client as a 400 invalid_request.
// A successful parse allocates nothing once the peek is warm.
func (p *peek) parse(body []byte, messages bool) error {
	p.Model, p.User = nil, nil
	p.HasUser, p.Stream, p.HasTools = false, false, false
	p.nfields, p.seen = 0, 0
	p.messages = messages

	if len(body) == 0 {
		return errEmptyBody
	}
	top, deep := p.scan(body)
	if deep {
		return errTooDeep
	}
	if err := fastjson.ValidateBytes(body); err != nil {
		return fmt.Errorf("request body is not valid JSON: %s", err)
	}
	// From here on body is valid JSON, so scan's positions are exact.
	if top != '{' {
		return fmt.Errorf("request body must be a JSON object, not %s", router.JSONTypeName(typeOf(top)))
	}
	for _, f := range p.fields[:p.nfields] {
		if err := p.take(f); err != nil {
			return err
		}
	}
	if p.Model == nil {
		return errors.New(`request body has no "model"; it must name the model as a string`)
	}
	return nil
}

// maxKeptBuffer is the largest model/user buffer a pooled peek keeps
// between requests; a larger one (a client may send a megabyte "user") is
// dropped at release, and the parser with it if it unescaped one.
const maxKeptBuffer = 4 << 10

// release forgets the request: the field slices into its body, and buffers
// a large field grew.
func (p *peek) release() {
	p.Model, p.User = nil, nil
	clear(p.fields[:])
	p.nfields = 0
	if cap(p.modelBuf) > maxKeptBuffer || cap(p.userBuf) > maxKeptBuffer {
		p.modelBuf, p.userBuf = nil, nil
		p.json = fastjson.Parser{}
	}
}

// take applies one of the four fields; fields come in body order, so the
// first problem in the body is the one reported.
func (p *peek) take(f field) error {
	if p.seen&f.bit != 0 {
		return fmt.Errorf("request body has %q twice", fieldName(f.bit))
	}
	p.seen |= f.bit
	t := typeOf(f.val[0])
	switch f.bit {
	case seenModel:
		if t != fastjson.TypeString {
			return fmt.Errorf(`"model" must be a string, not %s`, router.JSONTypeName(t))
		}
		p.modelBuf = p.unquote(p.modelBuf[:0], f.val)
		p.Model = p.modelBuf
		if len(p.Model) == 0 {
			return errors.New(`"model" must not be empty`)
		}
	case seenUser:
		if t != fastjson.TypeString {
			return fmt.Errorf(`"user" must be a string, not %s`, router.JSONTypeName(t))
		}
		p.userBuf = p.unquote(p.userBuf[:0], f.val)
		p.User = p.userBuf
		p.HasUser = true
	case seenStream:
		switch t {
		case fastjson.TypeTrue:
			p.Stream = true
		case fastjson.TypeFalse:
		default:
			return fmt.Errorf(`"stream" must be a boolean, not %s`, router.JSONTypeName(t))
		}
	case seenTools:
		switch t {
		case fastjson.TypeNull:
		case fastjson.TypeArray:
			i := skipSpace(f.val, 1)
			p.HasTools = i < len(f.val) && f.val[i] != ']'
		default:
			return fmt.Errorf(`"tools" must be an array, not %s`, router.JSONTypeName(t))
		}
	case seenMetadata:
		switch t {
		case fastjson.TypeNull:
		case fastjson.TypeObject:
			return p.metadataUser(f.val)
		default:
			return fmt.Errorf(`"metadata" must be an object, not %s`, router.JSONTypeName(t))
		}
	}
	return nil
}

// metadataUser takes User from the "user_id" member of obj, a valid JSON
// object: a string is the user, null or no member is none, anything else
// or a second "user_id" is refused.
func (p *peek) metadataUser(obj []byte) error {
	var val []byte
	i := 1
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			break // "}": obj is valid JSON
		}
		end := stringEnd(obj, i)
		key := obj[i : end+1]
		i = skipSpace(obj, skipSpace(obj, end+1)+1) // past ':'
		start := i
		i, _ = skipValue(obj, i, 1)
		if p.keyIs(key, "user_id") {
			if val != nil {
				return errors.New(`request body has "metadata"."user_id" twice`)
			}
			val = obj[start:i]
		}
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
	if val == nil {
		return nil
	}
	switch t := typeOf(val[0]); t {
	case fastjson.TypeNull:
		return nil
	case fastjson.TypeString:
		p.userBuf = p.unquote(p.userBuf[:0], val)
		p.User = p.userBuf
		p.HasUser = true
		return nil
	default:
		return fmt.Errorf(`"metadata"."user_id" must be a string, not %s`, router.JSONTypeName(t))
	}
}

// unquote appends the text of the valid JSON string literal q (quotes
// included) to dst.
func (p *peek) unquote(dst, q []byte) []byte {
	inner := q[1 : len(q)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return append(dst, inner...)
	}
	v, err := p.json.ParseBytes(q)
	if err != nil { // unreachable: q passed Validate
		return append(dst, inner...)
	}
	s, _ := v.StringBytes() // cannot fail: q is a string
	return append(dst, s...)
}

// scan walks body once without recursion: it records the values of the
// top-level keys model, user, stream and tools in p.fields, and reports
// the first non-space byte (the top-level value's kind) and whether arrays
// and objects nest deeper than maxBodyDepth anywhere. On a body that is not
// valid JSON its findings are meaningless but it still ends, without
// panicking; parse only trusts them after Validate.
func (p *peek) scan(b []byte) (top byte, deep bool) {
	i := skipSpace(b, 0)
	if i == len(b) {
		return 0, false
	}
	top = b[i]
	if top != '{' {
		_, deep = skipValue(b, i, 0)
		return top, deep
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return top, false // "}" (done) or not JSON: Validate decides
		}
		end := stringEnd(b, i)
		if end >= len(b) {
			return top, false // an unterminated key: not JSON
		}
		key := b[i : end+1]
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return top, false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return top, false
		}
		start := i
		i, deep = skipValue(b, i, 1)
		if deep {
			return top, true
		}
		if bit := p.fieldBit(key); bit != 0 && p.nfields < len(p.fields) {
			p.fields[p.nfields] = field{bit: bit, val: b[start:i]}
			p.nfields++
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// fieldBit returns the seen* bit of the key literal k (quotes included), or
// 0 when it names none of the routing fields ("user" on a Messages body,
// "metadata" on any other).
func (p *peek) fieldBit(k []byte) uint8 {
	switch string(p.keyText(k)) {
	case "model":
		return seenModel
	case "user":
		if !p.messages {
			return seenUser
		}
	case "stream":
		return seenStream
	case "tools":
		return seenTools
	case "metadata":
		if p.messages {
			return seenMetadata
		}
	}
	return 0
}

// keyText returns the text of the key literal k (quotes included): a view
// of k, unless it holds an escape (then the parser's memory, valid until
// its next use).
func (p *peek) keyText(k []byte) []byte {
	name := k[1 : len(k)-1]
	if bytes.IndexByte(name, '\\') >= 0 { // an escaped key: compare its text
		if v, err := p.json.ParseBytes(k); err == nil {
			name, _ = v.StringBytes()
		}
	}
	return name
}

// keyIs reports whether the key literal k spells name.
func (p *peek) keyIs(k []byte, name string) bool { return string(p.keyText(k)) == name }

func fieldName(bit uint8) string {
	switch bit {
	case seenModel:
		return "model"
	case seenUser:
		return "user"
	case seenStream:
		return "stream"
	case seenMetadata:
		return "metadata"
	}
	return "tools"
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

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// stringEnd returns the index of the quote closing the string that opens at
// b[i], or len(b) when there is none.
func stringEnd(b []byte, i int) int {
	i++
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		q := i + j
		n := 0 // backslashes right before the quote: odd = escaped
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
	return len(b)
}

// skipValue returns the index just past the value that starts at b[i] and
// whether it nests deeper than fastjson allows: base is the depth of the
// container holding the value (0 for the body's top level); like
// fastjson's parser, a value's depth is its containers plus one, and no
// value may be deeper than maxBodyDepth. It stops at the first value too
// deep. It counts brackets, not grammar.
func skipValue(b []byte, i, base int) (end int, deep bool) {
	switch b[i] {
	case '"':
		return min(stringEnd(b, i)+1, len(b)), false
	case '{', '[':
		depth := base
		for ; i < len(b); i++ {
			switch c := b[i]; c {
			case ' ', '\n', '\r', '\t', ',', ':':
				continue
			case '}', ']':
				if depth--; depth <= base {
					return i + 1, false
				}
				continue
			default:
				// c starts (or continues) a value, or a key, inside the
				// container at depth: that value is at depth+1.
				if depth >= maxBodyDepth {
					return i, true
				}
				switch c {
				case '"':
					i = stringEnd(b, i)
				case '{', '[':
					depth++
				}
			}
		}
		return len(b), false
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\n', '\r', '\t':
			return i, false
		}
		i++
	}
	return i, false
}
