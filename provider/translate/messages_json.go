package translate

import (
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/internal/jsonw"
)

// JSON helpers of the messages translator. A string the translation passes
// on unchanged (a text, an id, a tool name, image data) is copied as the
// token the sender wrote, escapes and all: fastjson keeps a string raw
// until something reads it, and MarshalTo then appends it as it came, so
// the text of a long conversation is neither unescaped nor escaped again.
// Such a value must therefore never be read (Type, StringBytes) before it
// is copied: reading it unescapes it in place, and MarshalTo would then
// quote it with strconv rules, which are not JSON's.

// msgParsers parses request bodies, answers and stream chunks; a parsed
// value never outlives the call that took the parser.
var msgParsers fastjson.ParserPool

// appendRawString appends v's string token (quotes included) as the sender
// wrote it. ok is false, and nothing is appended, when v is not a string.
func appendRawString(dst []byte, v *fastjson.Value) ([]byte, bool) {
	if v == nil || v.GetObject() != nil || v.GetArray() != nil {
		return dst, false
	}
	// Numbers, true, false and null marshal to themselves: only a string
	// begins with a quote.
	n := len(dst)
	dst = v.MarshalTo(dst)
	if len(dst) == n || dst[n] != '"' {
		return dst[:n], false
	}
	return dst, true
}

// appendRawInner appends the inside of v's string token (no quotes), to be
// spliced into a string being written; ok as for appendRawString.
func appendRawInner(dst []byte, v *fastjson.Value) ([]byte, bool) {
	n := len(dst)
	dst, ok := appendRawString(dst, v)
	if !ok {
		return dst, false
	}
	// Drop the two quotes: the overlapping copy moves the inside left.
	return append(dst[:n], dst[n+1:len(dst)-1]...), true
}

// str returns v's string value, reading (unescaping) it: only for a value
// the caller will not copy raw. ok is false when v is not a string.
func str(v *fastjson.Value) ([]byte, bool) {
	if v == nil || v.Type() != fastjson.TypeString {
		return nil, false
	}
	b, _ := v.StringBytes()
	return b, true
}

// isNumber reports whether v is a JSON number. It reads v: only for a
// value that is not copied raw if it turns out to be a string.
func isNumber(v *fastjson.Value) bool { return v != nil && v.Type() == fastjson.TypeNumber }

// isNull reports whether v is absent or null. It reads v: only for a value
// that is not copied raw if it turns out to be a string (use
// appendStringOrNull for one that is).
func isNull(v *fastjson.Value) bool { return v == nil || v.Type() == fastjson.TypeNull }

// What appendStringOrNull found.
const (
	rawOther  = iota // neither a string nor null (nothing appended)
	rawString        // a string, appended raw
	rawNull          // absent or null (nothing appended)
)

// appendStringOrNull appends v's string token as appendRawString does, or
// reports v absent or null, without reading a string first.
func appendStringOrNull(dst []byte, v *fastjson.Value) ([]byte, int) {
	if out, ok := appendRawString(dst, v); ok {
		return out, rawString
	}
	if isNull(v) { // not a string: reading it changes nothing
		return dst, rawNull
	}
	return dst, rawOther
}

// appendRawInnerOrNull appends v's inside as appendRawInner does, or
// reports v absent or null, as appendStringOrNull does.
func appendRawInnerOrNull(dst []byte, v *fastjson.Value) ([]byte, int) {
	if out, ok := appendRawInner(dst, v); ok {
		return out, rawString
	}
	if isNull(v) {
		return dst, rawNull
	}
	return dst, rawOther
}

// appendString appends s as a JSON string.
func appendString(dst, s []byte) []byte { return jsonw.String(dst, byteconv.String(s)) }

// pathError returns the 400 of a request the translation refuses, its
// message prefixed by where in the body the fault is ("messages.2.content").
func pathError(l loc, msg string) *Error {
	if p := l.String(); p != "" {
		msg = p + ": " + msg
	}
	return &Error{Status: 400, Code: "invalid_request", Message: msg}
}

// loc names a place in the request body for an error message. A value,
// extended as the translation descends and spelt out only when an error
// needs it, so a request that translates costs no string per block.
type loc struct {
	n   int
	seg [8]struct {
		key string
		idx int // for an index segment; key is ""
	}
}

// rootLoc is the top-level member k.
func rootLoc(k string) loc { return loc{}.key(k) }

// key is l's member k (segments past eight are left out).
func (l loc) key(k string) loc {
	if l.n < len(l.seg) {
		l.seg[l.n].key = k
		l.n++
	}
	return l
}

// index is l's element i.
func (l loc) index(i int) loc {
	if l.n < len(l.seg) {
		l.seg[l.n].key, l.seg[l.n].idx = "", i
		l.n++
	}
	return l
}

// String spells l as the Messages API does: "messages.2.content.0".
func (l loc) String() string {
	var b []byte
	for i := 0; i < l.n; i++ {
		if i > 0 {
			b = append(b, '.')
		}
		if s := l.seg[i]; s.key != "" {
			b = append(b, s.key...)
		} else {
			b = strconv.AppendInt(b, int64(s.idx), 10)
		}
	}
	return string(b)
}
