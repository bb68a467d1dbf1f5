package hotpath

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/jsonscan"
)

// Stored ids inside a request body (docs/residency.md, Stored objects
// named inside a request): a chat, Responses or Messages request can name
// a stored object the provider reads under the gateway's one credential:
// a file by "file_id" (chat's file parts, Responses' input_file and
// input_image parts, Anthropic's file sources and container uploads) or in
// a "file_ids" array (code interpreter containers), and on the Responses
// API a stored item by "id" (item_reference items, and every item an
// input passes back). They are read wherever they are nested, every copy
// of a repeated key, and under every key a case-insensitive decoder would
// take for them, so that whatever copy the upstream reads was checked.

// maxStoredRefs bounds the distinct stored ids one request may name.
const maxStoredRefs = 4096

// maxItemIDBytes bounds an item id that is looked up; a longer string was
// never recorded.
const maxItemIDBytes = 256

// storedRefs is what collect found in a body: the file ids and item ids it
// names, each once, unescaped.
type storedRefs struct {
	Files, Items []string
	// seen has bit 1 for each file id found, bit 2 for each item id.
	seen map[string]uint8
}

var errTooManyRefs = fmt.Errorf("request body names more than %d stored objects (file_id, file_ids, id)", maxStoredRefs)

// storedKeys are the keys a stored id hides under, as routing keys (for
// matchKey); their bits say which kind each names.
var storedKeys = [...]routingKey{{keyFileID, refFile}, {keyFileIDs, refFile}, {keyItemID, refItem}}

// Bits of storedKeys.
const (
	refFile uint8 = 1 << iota
	refItem
)

// maxStoredKeyBytes is the longest raw key (between its quotes) that can
// spell one of storedKeys: "file_ids", eight characters, each at most a
// six-byte \u escape.
const maxStoredKeyBytes = 8 * 6

// mayNameStored reports whether body might name a stored file (files) or,
// on the Responses API, a stored item (items): false only when no member
// key of the body decodes to one of storedKeys under Unicode simple case
// folding (as encoding/json matches keys), however nested or escaped. It
// reads the raw bytes with vectorized searches and no parse.
//
// Every member of a JSON object is a key string, whitespace, then ':'. So
// at each ':' the key before it, if any, is read back to its opening quote
// (the nearest quote: a key holding an escaped quote names none of them)
// and matched as the peek matches routing keys (matchKey: escapes decoded,
// case folded); only a key of the length of one of them, or holding an
// escape, is decoded. A ':' inside a string may be taken for a key's: that
// only costs a parse.
func mayNameStored(body []byte, files, items bool) bool {
	var want uint8
	if files {
		want |= refFile
	}
	if items {
		want |= refItem
	}
	if want == 0 {
		return false
	}
	for i := 0; ; {
		colon := nextColon(body, i)
		if colon < 0 {
			return false
		}
		i = colon + 1
		end := colon - 1 // the key's closing quote
		for end >= 0 && (body[end] == ' ' || body[end] == '\n' || body[end] == '\r' || body[end] == '\t') {
			end--
		}
		if end < 1 || body[end] != '"' || escapedAt(body, end) {
			continue // not the end of a key
		}
		// Back to the opening quote, noting an escape on the way.
		lo, q, escaped := max(0, end-maxStoredKeyBytes-1), end-1, false
		for q >= lo && body[q] != '"' {
			escaped = escaped || body[q] == '\\'
			q--
		}
		if q < lo {
			continue // longer than any of them
		}
		raw := body[q+1 : end]
		if !escaped {
			// Fast path: written plainly, it is one of them in some case.
			if plainStoredKey(raw)&want != 0 {
				return true
			}
			continue
		}
		if k, _, err := matchKey(raw, storedKeys[:]); err == nil && k != nil && k.bit&want != 0 {
			return true
		}
	}
}

// escapedAt reports whether the quote at b[i] is escaped: an odd run of
// backslashes before it.
func escapedAt(b []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// plainStoredKey returns the bit of the stored key (storedKeys) that raw,
// a key without escapes, spells in some case ("id", "file_id",
// "file_ids", or "file_idſ", ſ folding to s), or 0.
func plainStoredKey(raw []byte) uint8 {
	switch len(raw) {
	case 2:
		if raw[0]|0x20 == 'i' && raw[1]|0x20 == 'd' {
			return refItem
		}
	case 7, 8, 9:
		if raw[4] != '_' || raw[0]|0x20 != 'f' || raw[1]|0x20 != 'i' || raw[2]|0x20 != 'l' || raw[3]|0x20 != 'e' ||
			raw[5]|0x20 != 'i' || raw[6]|0x20 != 'd' {
			return 0
		}
		switch {
		case len(raw) == 7,
			len(raw) == 8 && raw[7]|0x20 == 's',
			len(raw) == 9 && raw[7] == 0xc5 && raw[8] == 0xbf: // ſ
			return refFile
		}
	}
	return 0
}

// colons is eight copies of ':', for jsonscan.ZeroBytes.
const colons = 0x3a3a3a3a3a3a3a3a

// nextColon returns the index of the first ':' at or after b[i], or -1.
// Members are short, so the next colon is mostly a few bytes on: eight
// bytes at a time (SWAR) find it there before a vectorized search is set
// up for a long gap.
func nextColon(b []byte, i int) int {
	for n := min(len(b)-8, i+jsonscan.ShortString); i <= n; i += 8 {
		if m := jsonscan.ZeroBytes(binary.LittleEndian.Uint64(b[i:]) ^ colons); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	if j := bytes.IndexByte(b[i:], ':'); j >= 0 {
		return i + j
	}
	return -1
}

// Key names a stored id can hide under.
const (
	keyFileID  = "file_id"
	keyFileIDs = "file_ids"
	keyItemID  = "id"
)

// collect parses body with p (as fastjson, the reader the gateway's own
// translators use, reads it) and gathers every stored id it names: the
// strings under a key folding to "file_id", the strings of an array under
// one folding to "file_ids", and with items the strings under one folding
// to "id", at any depth, every copy of a repeated key. An id that could
// never have been recorded (empty, or an item id over maxItemIDBytes) is
// left out. The error is a 400's message.
func (r *storedRefs) collect(p *fastjson.Parser, body []byte, items bool) error {
	r.Files, r.Items = r.Files[:0], r.Items[:0]
	clear(r.seen)
	v, err := p.ParseBytes(body)
	if err != nil {
		return fmt.Errorf("request body is not valid JSON: %v", err)
	}
	return r.walk(v, items)
}

// walk gathers the ids under v.
func (r *storedRefs) walk(v *fastjson.Value, items bool) error {
	switch v.Type() {
	case fastjson.TypeArray:
		a, _ := v.Array()
		for _, x := range a {
			if err := r.walk(x, items); err != nil {
				return err
			}
		}
	case fastjson.TypeObject:
		o, _ := v.Object()
		var err error
		o.Visit(func(k []byte, x *fastjson.Value) {
			if err != nil {
				return
			}
			switch {
			case bytes.EqualFold(k, []byte(keyFileID)):
				err = r.add(&r.Files, 1, x, 0)
			case bytes.EqualFold(k, []byte(keyFileIDs)) && x.Type() == fastjson.TypeArray:
				a, _ := x.Array()
				for _, s := range a {
					if err = r.add(&r.Files, 1, s, 0); err != nil {
						return
					}
				}
			case items && bytes.EqualFold(k, []byte(keyItemID)):
				err = r.add(&r.Items, 2, x, maxItemIDBytes)
			}
			if err == nil {
				err = r.walk(x, items)
			}
		})
		return err
	}
	return nil
}

// add notes the string x (anything else names nothing) in *list, whose
// seen bit is bit, once; limit > 0 leaves out longer strings.
func (r *storedRefs) add(list *[]string, bit uint8, x *fastjson.Value, limit int) error {
	s, err := x.StringBytes()
	if err != nil || len(s) == 0 || (limit > 0 && len(s) > limit) {
		return nil
	}
	if r.seen == nil {
		r.seen = map[string]uint8{}
	}
	had, ok := r.seen[string(s)]
	if had&bit != 0 {
		return nil
	}
	if !ok && len(r.seen) >= maxStoredRefs {
		return errTooManyRefs
	}
	id := string(s)
	r.seen[id] = had | bit
	*list = append(*list, id)
	return nil
}
