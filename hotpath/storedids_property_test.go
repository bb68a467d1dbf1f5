package hotpath

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

// fastjsonRefs is the reference reading of the stored ids in body: every
// object member, at any depth, as fastjson decodes its key (escapes
// decoded, every copy of a repeated key visited), matched case-
// insensitively (strings.EqualFold, Unicode simple folding, as
// encoding/json matches keys). ok is false when fastjson cannot parse
// body (no upstream reads it either).
func fastjsonRefs(body []byte, items bool) (files, itemIDs []string, ok bool) {
	var p fastjson.Parser
	v, err := p.ParseBytes(body)
	if err != nil {
		return nil, nil, false
	}
	var walk func(v *fastjson.Value)
	walk = func(v *fastjson.Value) {
		switch v.Type() {
		case fastjson.TypeArray:
			for _, x := range v.GetArray() {
				walk(x)
			}
		case fastjson.TypeObject:
			o := v.GetObject()
			o.Visit(func(k []byte, x *fastjson.Value) {
				key := string(k)
				str := func() (string, bool) {
					if x.Type() != fastjson.TypeString {
						return "", false
					}
					s := string(x.GetStringBytes())
					return s, s != ""
				}
				switch {
				case strings.EqualFold(key, "file_id"):
					if s, ok := str(); ok {
						files = append(files, s)
					}
				case strings.EqualFold(key, "file_ids"):
					for _, e := range x.GetArray() {
						if e.Type() == fastjson.TypeString && len(e.GetStringBytes()) > 0 {
							files = append(files, string(e.GetStringBytes()))
						}
					}
				case items && strings.EqualFold(key, "id"):
					if s, ok := str(); ok && len(s) <= maxItemIDBytes {
						itemIDs = append(itemIDs, s)
					}
				}
				walk(x)
			})
		}
	}
	walk(v)
	return files, itemIDs, true
}

// dedup sorts and dedups ids.
func dedup(ids []string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// checkRefs checks body against the reference reading: whenever fastjson
// reads a stored id in it, the pre-check must not skip it, and collect
// must find exactly the ids fastjson reads.
func checkRefs(t *testing.T, body []byte) {
	t.Helper()
	for _, items := range []bool{false, true} {
		files, itemIDs, ok := fastjsonRefs(body, items)
		if !ok {
			continue
		}
		if (len(files) > 0 || len(itemIDs) > 0) && !mayNameStored(body, true, items) {
			t.Fatalf("the pre-check skipped %s (items %v), in which fastjson reads files %q, items %q", body, items, files, itemIDs)
		}
		if len(files) > 0 && !mayNameStored(body, true, false) {
			t.Fatalf("the pre-check skipped the file ids %q of %s", files, body)
		}
		var r storedRefs
		var p fastjson.Parser
		if err := r.collect(&p, body, items); err != nil {
			if err == errTooManyRefs {
				continue
			}
			t.Fatalf("collect %s: %v", body, err)
		}
		if got, want := dedup(r.Files), dedup(files); !slices.Equal(got, want) {
			t.Fatalf("collect %s: files %q; fastjson reads %q", body, got, want)
		}
		if got, want := dedup(r.Items), dedup(itemIDs); !slices.Equal(got, want) {
			t.Fatalf("collect %s: items %q; fastjson reads %q", body, got, want)
		}
	}
}

// genBody builds random JSON bodies whose keys are often spelled like a
// stored id's key: in any case, with some letters as \u escapes (upper-
// or lower-case hex), with ſ for s, and near misses.
type genBody struct{ r *rand.Rand }

var trickyKeys = []string{"file_id", "file_ids", "id", "fileid", "file-id", "file_i", "ile_id", "_id", "ids", "xid", "idx",
	"file_idx", "user_id", "call_id", "type", "text", "source", "content", "i", "d", "previous_response_id"}

func (g genBody) key() string {
	k := trickyKeys[g.r.IntN(len(trickyKeys))]
	if g.r.IntN(2) == 0 {
		k = trickyKeys[g.r.IntN(3)] // file_id, file_ids, id
	}
	if g.r.IntN(4) == 0 {
		return g.spell(k)
	}
	return k
}

// spell writes s (a key's text) as JSON string content, each letter in a
// random case, some escaped, s sometimes as ſ.
func (g genBody) spell(s string) string {
	var b strings.Builder
	for _, c := range s {
		if g.r.IntN(2) == 0 && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if (c == 's' || c == 'S') && g.r.IntN(4) == 0 {
			c = 'ſ'
		}
		switch g.r.IntN(4) {
		case 0:
			hex := fmt.Sprintf(`\u%04x`, c)
			if g.r.IntN(2) == 0 {
				hex = fmt.Sprintf(`\u%04X`, c)
			}
			b.WriteString(hex)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func (g genBody) value(depth int) string {
	switch n := g.r.IntN(9); {
	case depth <= 0 || n < 3:
		return g.scalar()
	case n < 6:
		var b strings.Builder
		b.WriteByte('{')
		for i := range g.r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `%s"%s"%s:%s%s`, g.ws(), g.key(), g.ws(), g.ws(), g.value(depth-1))
		}
		b.WriteString(g.ws() + "}")
		return b.String()
	default:
		var b strings.Builder
		b.WriteByte('[')
		for i := range g.r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(g.ws() + g.value(depth-1))
		}
		b.WriteString(g.ws() + "]")
		return b.String()
	}
}

func (g genBody) scalar() string {
	switch g.r.IntN(7) {
	case 0:
		return "null"
	case 1:
		return "true"
	case 2:
		return "-12.5e3"
	case 3:
		return `""`
	case 4:
		return `"` + g.spell("file-abc") + `"`
	default:
		ids := []string{"file-acme-1", "msg_1", "paid", `caf\u00e9`, `\u4f60\u597d`, `a\"id\"b`, `back\\`}
		return `"` + ids[g.r.IntN(len(ids))] + `"`
	}
}

func (g genBody) ws() string {
	return [...]string{"", "", " ", "\n\t"}[g.r.IntN(4)]
}

// TestStoredIDsPrecheckProperty: over random bodies built to spell stored
// ids' keys every way (case, escapes, ſ, duplicates, nesting), the pre-
// check never skips a body fastjson reads a stored id in, and collect
// finds exactly the ids fastjson reads.
func TestStoredIDsPrecheckProperty(t *testing.T) {
	g := genBody{rand.New(rand.NewPCG(1, 2))}
	n := 0
	for range 20000 {
		body := []byte(`{"model":"m",` + fmt.Sprintf(`"%s":%s`, g.key(), g.value(5)) + `}`)
		checkRefs(t, body)
		if f, i, _ := fastjsonRefs(body, true); len(f)+len(i) > 0 {
			n++
		}
	}
	if n < 2000 {
		t.Fatalf("only %d of 20000 bodies named a stored id: the generator is too weak to test anything", n)
	}
}

// FuzzStoredIDsPrecheck: for any body fastjson parses, the pre-check never
// skips one in which fastjson reads a stored id, and collect agrees with
// fastjson.
func FuzzStoredIDsPrecheck(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`,
		`{"model":"m","x":{"FILE_ID":"file-1","fil\u0065_id":"file-2"}}`,
		`{"model":"m","input":[{"type":"item_reference","\u0069\u0064":"msg_1"}]}`,
		`{"model":"m","tools":[{"container":{"file_id\u017f":["file-1"],"file_idſ":["file-2"]}}]}`,
		`{"model":"m","a":"\\u0069d","b":"x\"id\":1"}`,
		`{"model":"m","messages":[{"role":"user","content":"profile_id paid"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkRefs(t, body)
	})
}

// TestStoredIDsPrecheckSkipsUsualBodies: the pre-check reads bodies that
// name no stored id, however full of ids, underscores and escapes of other
// kinds, as naming none: they cost no parse.
func TestStoredIDsPrecheckSkipsUsualBodies(t *testing.T) {
	for _, c := range []struct {
		items bool // the Responses surface, where item ids are read too
		body  string
	}{
		{false, `{"model":"gpt-4o","max_tokens":100,"tool_choice":"auto","messages":[{"role":"user","content":"caf\u00e9 \u4f60\u597d, what is my user_id?"},` +
			`{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_id","arguments":"{\"user_id\":1}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"paid"}],"tools":[{"type":"function","function":{"name":"get_id","parameters":{"type":"object","properties":{"user_id":{"type":"string"}}}}}]}`},
		{true, `{"model":"x","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"call_1","output":"ok"}]}`},
		{false, `{"model":"claude-x","metadata":{"user_id":"u"},"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"did it"}]}]}`},
	} {
		if mayNameStored([]byte(c.body), true, c.items) {
			t.Errorf("the pre-check would parse %s, which names no stored id", c.body)
		}
	}
}
