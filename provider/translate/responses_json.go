package translate

// The byte-level helpers the Responses translator shares between its
// request, answer and stream halves: a parser pool, typed reads of parsed
// values, and writers. The request's texts, arguments, outputs, URLs,
// descriptions and schemas are copied as the client wrote them, escapes
// included (appendRawString, messages_json.go), so they must not be read
// (respStr, respNull) before they are copied; what the translation reads
// anyway (types, roles, names, ids) and every answer and stream string is
// written with jsonw.

import (
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/internal/jsonw"
)

// respParsers parses Responses requests and chat answers; a parsed value
// never outlives the call that got the parser.
var respParsers fastjson.ParserPool

// respStr returns v's string value, viewing the parser's memory, and
// whether v is a string at all.
func respStr(v *fastjson.Value) (string, bool) {
	if v == nil || v.Type() != fastjson.TypeString {
		return "", false
	}
	b, _ := v.StringBytes()
	return byteconv.String(b), true
}

// respArray returns v's elements; none when v is not an array.
func respArray(v *fastjson.Value) []*fastjson.Value {
	if v == nil || v.Type() != fastjson.TypeArray {
		return nil
	}
	a, _ := v.Array()
	return a
}

// respNull reports whether v is absent or JSON null.
func respNull(v *fastjson.Value) bool {
	return v == nil || v.Type() == fastjson.TypeNull
}

// appendRespObject appends the object v (a tool's parameters, a schema) as
// the client wrote it, keys and strings included, as the Messages
// translator copies input_schema; v must not have been read below its top
// (Get, Visit) before. fastjson reads numbers leniently ("+1", ".", "NaN"),
// and MarshalTo writes them as read: an object holding a number that is
// not JSON's is refused (false, nothing appended). scratch is a buffer to
// reuse, returned.
func appendRespObject(dst []byte, v *fastjson.Value, scratch []byte) ([]byte, []byte, bool) {
	n := len(dst)
	dst = v.MarshalTo(dst)
	ok := true
	if scratch = respJSONNumbers(v, scratch, &ok); !ok {
		return dst[:n], scratch, false
	}
	return dst, scratch, true
}

// respJSONNumbers clears ok when a number in v is not in JSON's grammar.
// It looks at each scalar through its MarshalTo text, written into
// scratch (returned), so that no string is read (unescaped).
func respJSONNumbers(v *fastjson.Value, scratch []byte, ok *bool) []byte {
	if o := v.GetObject(); o != nil {
		o.Visit(func(_ []byte, vv *fastjson.Value) {
			if *ok {
				scratch = respJSONNumbers(vv, scratch, ok)
			}
		})
		return scratch
	}
	if a := v.GetArray(); a != nil {
		for _, vv := range a {
			if scratch = respJSONNumbers(vv, scratch, ok); !*ok {
				break
			}
		}
		return scratch
	}
	scratch = v.MarshalTo(scratch[:0])
	switch t := scratch; {
	case len(t) == 0, t[0] == '"', t[0] == '[', t[0] == '{': // a string, an empty array or object
	case string(t) == "true", string(t) == "false", string(t) == "null":
	default:
		*ok = respJSONNumber(t)
	}
	return scratch
}

// appendRespNumber appends a number value as written, if it is a JSON number.
func appendRespNumber(dst []byte, v *fastjson.Value) ([]byte, bool) {
	n := len(dst)
	dst = v.MarshalTo(dst)
	if !respJSONNumber(dst[n:]) {
		return dst[:n], false
	}
	return dst, true
}

// respJSONNumber reports whether b is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func respJSONNumber(b []byte) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// appendRespEscaped appends s escaped as the inside of a JSON string (no
// quotes), so several pieces can form one string literal.
func appendRespEscaped(dst []byte, s string) []byte {
	n := len(dst)
	dst = jsonw.String(dst, s)
	copy(dst[n:], dst[n+1:len(dst)-1])
	return dst[:len(dst)-2]
}

// appendRespKeyString appends ,"key":"s".
func appendRespKeyString(dst []byte, key, s string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return jsonw.String(dst, s)
}

// appendRespKeyInt appends ,"key":n.
func appendRespKeyInt(dst []byte, key string, n int64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return strconv.AppendInt(dst, n, 10)
}

// appendRespIDPart appends s keeping only the bytes an item id may hold
// ([A-Za-z0-9_-]), at most max of them: upstream ids become parts of the
// ids the client sees and must not carry anything else.
func appendRespIDPart(dst []byte, s string, max int) []byte {
	n := 0
	for i := 0; i < len(s) && n < max; i++ {
		if c := s[i]; c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			dst = append(dst, c)
			n++
		}
	}
	return dst
}

// appendRespHash64 appends the FNV-1a hash of b as 16 hex digits: the id of
// an answer whose upstream sent none, derived so the function stays pure.
func appendRespHash64(dst, b []byte) []byte {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	const hex = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, hex[(h>>uint(shift))&0xf])
	}
	return dst
}
