package router

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// Limits on the X-Gateway-Metadata header (docs/routing.md, 2).
const (
	// MaxMetadataBytes is the largest header value accepted, in bytes.
	MaxMetadataBytes = 4096
	// MaxMetadataEntries is the largest number of entries accepted.
	MaxMetadataEntries = 32
)

// MetadataParser parses X-Gateway-Metadata header values (docs/routing.md, 2) into
// Pairs. After warm-up a successful Parse allocates nothing.
//
// The zero value is ready to use. A MetadataParser is not safe for concurrent
// use; callers keep one per goroutine or pool them (sync.Pool).
type MetadataParser struct {
	json fastjson.Parser
	// pairs is the result slice, reused across calls.
	pairs []Pair
	// vals holds number and boolean literals. It is sized before the entries
	// are visited so that appends never move it while Pairs point into it.
	vals []byte
	// keyHash[i] is the FNV-1a hash of pairs[i].Key, so the duplicate check
	// compares bytes only when hashes collide.
	keyHash [MaxMetadataEntries]uint32
	// err carries a failure out of the Visit callback.
	err error
}

// Parse parses one header value. The returned Pairs (keys and values) point
// into p's buffers and are valid until the next call to Parse; callers copy
// what they keep. Callers must not modify the returned bytes.
//
// An empty value means "no metadata" and returns nil, nil: fasthttp cannot
// tell an absent header from an empty one, and neither can a client.
//
// The value must be a JSON object (whitespace around it allowed, nothing
// else after it) of at most MaxMetadataBytes bytes and MaxMetadataEntries
// entries, in valid UTF-8, whose values are strings, numbers or booleans.
// Strings are returned unescaped, numbers as their literal text ("1.0" stays
// "1.0", "1e3" stays "1e3"), booleans as "true" or "false". Duplicate keys
// are rejected rather than resolved first-wins or last-wins: the two
// readings would route differently, and the client should say what it means.
// A \u escape of a lone UTF-16 surrogate is rejected too, because it does
// not name a character and so cannot be compared with a configured value.
//
// Every error's message starts with "X-Gateway-Metadata: " and is meant to be
// returned to the client as the message of a 400 invalid_request error.
func (p *MetadataParser) Parse(header []byte) ([]Pair, error) {
	if len(header) == 0 {
		return nil, nil
	}
	if len(header) > MaxMetadataBytes {
		return nil, fmt.Errorf("X-Gateway-Metadata: %d bytes is too long; at most %d allowed", len(header), MaxMetadataBytes)
	}
	if !utf8.Valid(header) {
		return nil, errors.New("X-Gateway-Metadata: not valid UTF-8")
	}
	// fastjson's Parser is lenient (it accepts NaN, "1..2", unknown escapes
	// kept as written); Validate is strict JSON and also rejects trailing
	// bytes. Neither allocates on success.
	if err := fastjson.ValidateBytes(header); err != nil {
		return nil, fmt.Errorf("X-Gateway-Metadata: must be a single JSON object: %s", err)
	}
	if err := checkSurrogates(header); err != nil {
		return nil, err
	}
	v, err := p.json.ParseBytes(header)
	if err != nil {
		// Unreachable after Validate; kept so a fastjson change cannot
		// turn into a panic.
		return nil, fmt.Errorf("X-Gateway-Metadata: must be a single JSON object: %s", err)
	}
	if t := v.Type(); t != fastjson.TypeObject {
		return nil, fmt.Errorf("X-Gateway-Metadata: must be a JSON object, not %s", JSONTypeName(t))
	}
	obj, _ := v.Object() // cannot fail: v is an object
	if n := obj.Len(); n > MaxMetadataEntries {
		return nil, fmt.Errorf("X-Gateway-Metadata: %d entries is too many; at most %d allowed", n, MaxMetadataEntries)
	}

	// Every literal copied into vals is no longer than its text in the
	// header, so capacity len(header) means appends never reallocate.
	if cap(p.vals) < len(header) {
		p.vals = make([]byte, 0, max(len(header), 256))
	}
	p.vals = p.vals[:0]
	p.pairs = p.pairs[:0]
	p.err = nil
	obj.Visit(p.visit)
	if p.err != nil {
		err := p.err
		p.err = nil
		return nil, err
	}
	return p.pairs, nil
}

// visit records one entry; it is Object.Visit's callback.
func (p *MetadataParser) visit(key []byte, v *fastjson.Value) {
	if p.err != nil {
		return
	}
	// At most 32 keys: a quadratic scan over their hashes beats a map.
	h := fnv32a(key)
	for i := range p.pairs {
		if p.keyHash[i] == h && string(p.pairs[i].Key) == string(key) {
			p.err = fmt.Errorf("X-Gateway-Metadata: duplicate key %q", key)
			return
		}
	}
	var val []byte
	switch t := v.Type(); t {
	case fastjson.TypeString:
		val, _ = v.StringBytes() // cannot fail: v is a string
	case fastjson.TypeNumber, fastjson.TypeTrue, fastjson.TypeFalse:
		// MarshalTo appends a number's literal text exactly as written and
		// "true"/"false" for booleans.
		start := len(p.vals)
		p.vals = v.MarshalTo(p.vals)
		val = p.vals[start:len(p.vals):len(p.vals)]
	default:
		p.err = fmt.Errorf("X-Gateway-Metadata: value of %q must be a string, number or boolean, not %s", key, JSONTypeName(t))
		return
	}
	// Parse checked the entry count, so len(p.pairs) < MaxMetadataEntries.
	p.keyHash[len(p.pairs)] = h
	p.pairs = append(p.pairs, Pair{Key: key, Value: val})
}

// fnv32a is the 32-bit FNV-1a hash of b.
func fnv32a(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// JSONTypeName names a JSON type for an error message, with its article:
// "an object", "an array", "a string", "a number", "a boolean" or "null".
// The gateway's request checks (hotpath's peek, the metadata header) use
// it so they word a wrong type the same way.
func JSONTypeName(t fastjson.Type) string {
	switch t {
	case fastjson.TypeObject:
		return "an object"
	case fastjson.TypeArray:
		return "an array"
	case fastjson.TypeString:
		return "a string"
	case fastjson.TypeNumber:
		return "a number"
	case fastjson.TypeTrue, fastjson.TypeFalse:
		return "a boolean"
	case fastjson.TypeNull:
		return "null"
	}
	return "an unknown JSON type"
}

// checkSurrogates rejects \u escapes that encode a lone UTF-16 surrogate.
// b must already be valid JSON, so every backslash starts an escape inside a
// string and every \u is followed by four hex digits.
func checkSurrogates(b []byte) error {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped byte (it may itself be a backslash)
			continue
		}
		r := byteconv.Hex4(b[i+2 : i+6])
		i += 5
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return errLoneSurrogate
		case r >= 0xD800 && r <= 0xDBFF:
			// A high surrogate must be followed by an escaped low one.
			if i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
				return errLoneSurrogate
			}
			if lo := byteconv.Hex4(b[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
				return errLoneSurrogate
			}
			i += 6
		}
	}
	return nil
}

var errLoneSurrogate = errors.New(`X-Gateway-Metadata: a \u escape encodes a lone UTF-16 surrogate`)
