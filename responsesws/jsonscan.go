package responsesws

import (
	"bytes"
	"encoding/json"

	"github.com/switchyard/switchyard/internal/jsonscan"
)

// A scanner of one JSON object's top-level members for documents already
// validated (fastjson.ValidateBytes): it finds each member's key and the
// exact bytes of its value without decoding anything, so a message's
// members reach the HTTP body byte for byte. String ends and whitespace
// are found by internal/jsonscan, as the hot path's peek finds them; the
// peek's value skipping is not used here, since it checks the grammar
// (depth, scalars) that fastjson has already checked of a message.

// member is one top-level member: its key as decoded and its value's
// bytes.
type member struct {
	key string
	// rawKey is the key as sent, quotes included.
	rawKey []byte
	value  []byte
}

// members calls fn for each top-level member of the JSON object doc, in
// order, until fn returns false. doc should be a valid JSON object; on any
// other bytes it stops early and never reads out of bounds.
func members(doc []byte, fn func(m member) bool) {
	i := jsonscan.SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return
	}
	i++
	for {
		i = jsonscan.SkipSpace(doc, i)
		if i >= len(doc) || doc[i] != '"' {
			return
		}
		keyStart, end := i, jsonscan.StringEnd(doc, i)
		if end >= len(doc) {
			return
		}
		key := decodeKey(doc[i+1 : end])
		i = jsonscan.SkipSpace(doc, end+1) + 1 // the colon
		i = jsonscan.SkipSpace(doc, i)
		if i >= len(doc) {
			return
		}
		start := i
		i = skipValue(doc, i)
		if !fn(member{key: key, rawKey: doc[keyStart : end+1], value: doc[start:i]}) {
			return
		}
		i = jsonscan.SkipSpace(doc, i)
		if i < len(doc) && doc[i] == ',' {
			i++
		}
	}
}

// lookup returns the value of the first top-level member of the valid JSON
// object doc named key, or nil.
func lookup(doc []byte, key string) []byte {
	var v []byte
	members(doc, func(m member) bool {
		if m.key == key {
			v = m.value
			return false
		}
		return true
	})
	return v
}

// decodeKey returns a key's text: as is unless it holds an escape.
func decodeKey(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	if json.Unmarshal(q, &s) != nil {
		return string(raw)
	}
	return s
}

// stringText returns the text of a JSON string value v, ok false when v is
// not a string.
func stringText(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	return decodeKey(v[1 : len(v)-1]), true
}

// arrayInner returns the bytes between the brackets of a JSON array value v,
// without the whitespace around them; ok false when v is not an array.
func arrayInner(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '[' {
		return nil, false
	}
	return bytes.TrimSpace(v[1 : len(v)-1]), true
}

// skipValue returns the index just past the valid JSON value at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return min(jsonscan.StringEnd(b, i)+1, len(b))
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = jsonscan.StringEnd(b, i)
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\n', '\r', '\t':
			return i
		}
		i++
	}
	return i
}
