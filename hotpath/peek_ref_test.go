package hotpath

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
)

// refPeek is the peek as first written: fastjson.Validate, then a whole
// fastjson.Parser tree and Object.Visit over the top level (model and user
// point into the parser, valid until the next parse, as they did). It is
// the reference the two-pass peek (scan + Validate) is checked against.
type refPeek struct {
	json                      fastjson.Parser
	model, user               []byte
	hasUser, stream, hasTools bool
	seen                      uint8
	err                       error
}

func (p *refPeek) parse(body []byte) error {
	*p = refPeek{json: p.json}
	if len(body) == 0 {
		return errEmptyBody
	}
	if err := fastjson.ValidateBytes(body); err != nil {
		return fmt.Errorf("request body is not valid JSON: %s", err)
	}
	v, err := p.json.ParseBytes(body)
	if err != nil {
		return fmt.Errorf("request body is not valid JSON: %s", err)
	}
	if t := v.Type(); t != fastjson.TypeObject {
		return fmt.Errorf("request body must be a JSON object, not %s", router.JSONTypeName(t))
	}
	obj, _ := v.Object()
	obj.Visit(func(key []byte, v *fastjson.Value) {
		if p.err != nil {
			return
		}
		var bit uint8
		switch string(key) {
		case "model":
			bit = seenModel
		case "user":
			bit = seenUser
		case "stream":
			bit = seenStream
		case "tools":
			bit = seenTools
		default:
			return
		}
		if p.seen&bit != 0 {
			p.err = fmt.Errorf("request body has %q twice", key)
			return
		}
		p.seen |= bit
		t := v.Type()
		switch bit {
		case seenModel:
			if t != fastjson.TypeString {
				p.err = fmt.Errorf(`"model" must be a string, not %s`, router.JSONTypeName(t))
				return
			}
			p.model, _ = v.StringBytes()
			if len(p.model) == 0 {
				p.err = errors.New(`"model" must not be empty`)
			}
		case seenUser:
			if t != fastjson.TypeString {
				p.err = fmt.Errorf(`"user" must be a string, not %s`, router.JSONTypeName(t))
				return
			}
			p.user, _ = v.StringBytes()
			p.hasUser = true
		case seenStream:
			switch t {
			case fastjson.TypeTrue:
				p.stream = true
			case fastjson.TypeFalse:
			default:
				p.err = fmt.Errorf(`"stream" must be a boolean, not %s`, router.JSONTypeName(t))
			}
		case seenTools:
			switch t {
			case fastjson.TypeNull:
			case fastjson.TypeArray:
				a, _ := v.Array()
				p.hasTools = len(a) > 0
			default:
				p.err = fmt.Errorf(`"tools" must be an array, not %s`, router.JSONTypeName(t))
			}
		}
	})
	if p.err != nil {
		return p.err
	}
	if p.seen&seenModel == 0 {
		return errors.New(`request body has no "model"; it must name the model as a string`)
	}
	return nil
}

// agree fails t when the peek and the reference disagree on body.
func agree(t *testing.T, p *peek, ref *refPeek, body []byte) {
	t.Helper()
	err, rerr := p.parse(body, false), ref.parse(body)
	switch {
	case err == nil && rerr == nil:
		if string(p.Model) != string(ref.model) || string(p.User) != string(ref.user) || p.HasUser != ref.hasUser ||
			p.Stream != ref.stream || p.HasTools != ref.hasTools {
			t.Fatalf("body %q:\n peek model=%q user=%q/%v stream=%v tools=%v\n ref  model=%q user=%q/%v stream=%v tools=%v",
				body, p.Model, p.User, p.HasUser, p.Stream, p.HasTools, ref.model, ref.user, ref.hasUser, ref.stream, ref.hasTools)
		}
	case err == nil || rerr == nil:
		t.Fatalf("body %q: peek %v, reference %v", body, err, rerr)
	case errors.Is(err, errTooDeep) || strings.Contains(rerr.Error(), "too big depth"):
		// The depth limit is reported by the scan before Validate, the
		// reference's only by its parser after Validate: both say "not
		// valid JSON", and a too-deep body must be refused by both.
		const prefix = "request body is not valid JSON"
		if !strings.HasPrefix(err.Error(), prefix) || !strings.HasPrefix(rerr.Error(), prefix) {
			t.Fatalf("body %q: peek %q, reference %q", body, err, rerr)
		}
	case err.Error() != rerr.Error():
		t.Fatalf("body %q:\n peek      %q\n reference %q", body, err, rerr)
	}
}

// genValue writes a random JSON value of at most depth levels.
func genValue(r *rand.Rand, b *strings.Builder, depth int) {
	ws := func() {
		if r.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n"}[r.IntN(4)])
		}
	}
	ws()
	k := r.IntN(8)
	if depth <= 0 && k >= 6 {
		k = r.IntN(6)
	}
	switch k {
	case 0:
		b.WriteString(strconv.Quote(genString(r)))
	case 1:
		b.WriteString(genJSONString(r))
	case 2:
		b.WriteString([]string{"0", "-1", "3.25", "1e9", "-0.5E-3", "12345678901234567890"}[r.IntN(6)])
	case 3:
		b.WriteString([]string{"true", "false"}[r.IntN(2)])
	case 4:
		b.WriteString("null")
	case 5:
		b.WriteString(genJSONString(r))
	case 6:
		b.WriteByte('[')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			genValue(r, b, depth-1)
		}
		ws()
		b.WriteByte(']')
	case 7:
		genObject(r, b, depth-1, false)
	}
	ws()
}

var keys = []string{`"model"`, `"user"`, `"stream"`, `"tools"`, `"messages"`, `"mod\u0065l"`, `"\u0074ools"`,
	`"x"`, `"model "`, `"Model"`, `"us\"er"`, `""`}

// genObject writes a random object; top objects draw mostly the routing keys.
func genObject(r *rand.Rand, b *strings.Builder, depth int, top bool) {
	b.WriteByte('{')
	n := r.IntN(4)
	if top {
		n = 1 + r.IntN(5)
	}
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(keys[r.IntN(len(keys))])
		b.WriteByte(':')
		genValue(r, b, depth)
	}
	b.WriteByte('}')
}

// genString is text with the characters that matter to a string scanner.
func genString(r *rand.Rand) string {
	const alphabet = `ab"\{}[],: /é` + "\u2028"
	rs := []rune(alphabet)
	var s strings.Builder
	for range r.IntN(12) {
		s.WriteRune(rs[r.IntN(len(rs))])
	}
	return s.String()
}

// genJSONString is a JSON string literal with escapes strconv.Quote would
// not write: \/, \u, runs of backslashes before quotes.
func genJSONString(r *rand.Rand) string {
	parts := []string{`a`, `\"`, `\\`, `\\\"`, `\/`, `\u0041`, `\ud83d\ude00`, `\n`, `}`, `]`, `{`, `[`, `,`, `:`, ` `}
	var s strings.Builder
	s.WriteByte('"')
	for range r.IntN(8) {
		s.WriteString(parts[r.IntN(len(parts))])
	}
	s.WriteByte('"')
	return s.String()
}

// The two-pass peek reads exactly what the tree-building reference reads,
// and refuses exactly what it refuses, on random valid bodies shaped like
// requests (nesting, escapes, routing keys at every level, repeats), on
// those bodies cut short or with a byte changed, and on nesting around
// the depth limit.
func TestPeekAgreesWithReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p, ref := &peek{}, &refPeek{}
	valid := 0
	for range 20000 {
		var b strings.Builder
		genObject(r, &b, 4, true)
		body := []byte(b.String())
		if fastjson.ValidateBytes(body) == nil {
			valid++
		}
		agree(t, p, ref, body)
		if len(body) > 1 {
			agree(t, p, ref, body[:r.IntN(len(body))])
			mut := append([]byte(nil), body...)
			mut[r.IntN(len(mut))] = `"\{}[],: x1`[r.IntN(11)]
			agree(t, p, ref, mut)
		}
	}
	if valid < 15000 {
		t.Fatalf("only %d of 20000 generated bodies were valid JSON: the generator is broken", valid)
	}
	for _, n := range []int{298, 299, 300, 301} {
		for _, inner := range []string{"", "1", `"s"`, "[]", "{}"} {
			agree(t, p, ref, []byte(`{"model":"m","x":`+strings.Repeat("[", n)+inner+strings.Repeat("]", n)+`}`))
			agree(t, p, ref, []byte(strings.Repeat("[", n)+inner+strings.Repeat("]", n)))
			agree(t, p, ref, []byte(`{"model":"m","x":`+strings.Repeat(`{"a":`, n)+`1`+strings.Repeat("}", n)+`}`))
		}
	}
}

func FuzzPeekAgreesWithReference(f *testing.F) {
	for _, s := range []string{`{"model":"m"}`, `{"model":"m","stream":true,"tools":[1]}`, `[]`, `{"model":1}`,
		`{"model":"m"} x`, `{"mod\u0065l":"a\"b","user":"\\","tools":[ ]}`, `{"x":"\\\"}","model":"m"}`,
		`{"model":"m","x":[[[{"a":"]"}]]]}`, "{\"model\":\"a\x01\"}", `{"model":"m","model":"n"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		agree(t, &peek{}, &refPeek{}, b)
	})
}
