package hotpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// The peek is checked against encoding/json (a conforming decoder, and the
// one an upstream like Ollama uses): whenever the peek accepts a body,
// encoding/json decodes the same routing fields from it, and whenever the
// body breaks what docs/routing.md, 1 asks of it, the peek refuses it.
//
// refPeek decides what docs/routing.md, 1 asks by itself, the slow and obvious way:
// a recursive splitter finds the top-level members (strict grammar at the
// top level and in the messages surface's metadata, brackets, strings and
// depth elsewhere); encoding/json says which keys it would assign to a
// routing field (asked with a one-member probe object, so case folding is
// its own) and decodes the routing members, put alone into a fresh object.

// refResult is what a reference reading of a body found.
type refResult struct {
	model, user               string
	hasUser, stream, hasTools bool
}

// refRouting is the struct encoding/json decodes routing members into.
type refRouting struct {
	Model    *json.RawMessage `json:"model"`
	User     *json.RawMessage `json:"user"`
	Stream   *json.RawMessage `json:"stream"`
	Tools    *json.RawMessage `json:"tools"`
	Metadata *json.RawMessage `json:"metadata"`
}

type refMetadata struct {
	UserID *json.RawMessage `json:"user_id"`
}

// member is one member of an object, raw: the key literal with its quotes.
type member struct{ key, val []byte }

// refPeek returns the reference reading of body, or an error saying why it
// must be refused. tooDeep reports a refusal for nesting alone.
func refPeek(body []byte, messages bool) (res refResult, err error) {
	sp := &refSplitter{b: body}
	i := sp.ws(0)
	if i >= len(body) || body[i] != '{' {
		return res, fmt.Errorf("not an object")
	}
	top, i, err := sp.object(i, 1)
	if err != nil {
		return res, err
	}
	if sp.ws(i) != len(body) {
		return res, fmt.Errorf("trailing bytes")
	}
	names := []string{"model", "user", "stream", "tools"}
	if messages {
		names = []string{"model", "stream", "tools", "metadata"}
	}
	routed, err := refRouted(top, names, func(v *refRouting) []bool {
		return []bool{v.Model != nil, v.User != nil, v.Stream != nil, v.Tools != nil, v.Metadata != nil}
	}, []string{"model", "user", "stream", "tools", "metadata"})
	if err != nil {
		return res, err
	}
	model, ok := routed["model"]
	if !ok {
		return res, fmt.Errorf("no model")
	}
	if res.model, err = refString(model); err != nil || res.model == "" {
		return res, fmt.Errorf("model: %v", err)
	}
	if raw, ok := routed["stream"]; ok {
		if err := json.Unmarshal(raw, &res.stream); err != nil || raw[0] == 'n' {
			return res, fmt.Errorf("stream not a boolean")
		}
	}
	if raw, ok := routed["tools"]; ok && raw[0] != 'n' {
		if raw[0] != '[' {
			return res, fmt.Errorf("tools not an array")
		}
		// The array's inner grammar is the upstream's: count by structure.
		res.hasTools = bytes.TrimLeft(raw[1:], " \t\r\n")[0] != ']'
	}
	if raw, ok := routed["user"]; ok && !messages {
		if res.user, err = refString(raw); err != nil {
			return res, fmt.Errorf("user: %v", err)
		}
		res.hasUser = true
	}
	if raw, ok := routed["metadata"]; ok && messages && raw[0] != 'n' {
		if raw[0] != '{' {
			return res, fmt.Errorf("metadata not an object")
		}
		// The metadata object: the same again, one level down.
		msp := &refSplitter{b: raw}
		members, _, err := msp.object(0, 2)
		if err != nil {
			return res, err
		}
		routed, err := refRouted(members, []string{"user_id"}, func(v *refMetadata) []bool {
			return []bool{v.UserID != nil}
		}, []string{"user_id"})
		if err != nil {
			return res, err
		}
		if raw, ok := routed["user_id"]; ok && raw[0] != 'n' {
			if res.user, err = refString(raw); err != nil {
				return res, fmt.Errorf("user_id: %v", err)
			}
			res.hasUser = true
		}
	}
	return res, nil
}

// refRouted returns the raw values of the members encoding/json would
// assign to one of the fields named all (probed one member at a time into
// a T, whose set fields fields reports in the order of all), after
// checking that each such key is spelled exactly, is one of names (the
// routing keys of this object) and comes once. Members for fields of all
// outside names are dropped: they route nothing there.
func refRouted[T any](members []member, names []string, fields func(*T) []bool, all []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, m := range members {
		var probe T
		if err := json.Unmarshal([]byte(`{`+string(m.key)+`:null}`), &probe); err != nil {
			// Not a valid key literal: the peek decodes only keys short
			// enough to spell a routing key, and refuses those.
			if len(m.key)-2 <= maxKeyBytes && bytes.IndexByte(m.key, '\\') >= 0 {
				return nil, fmt.Errorf("bad key %q", m.key)
			}
			continue
		}
		// A null member leaves a pointer nil: probe with a value instead.
		if err := json.Unmarshal([]byte(`{`+string(m.key)+`:0}`), &probe); err != nil {
			// A type mismatch still tells which field the key names.
			_ = err
		}
		set := fields(&probe)
		name := ""
		for j, s := range set {
			if s {
				name = all[j]
			}
		}
		if name == "" {
			continue
		}
		var key string
		_ = json.Unmarshal(m.key, &key)
		if !slicesContain(names, name) {
			continue
		}
		if key != name {
			return nil, fmt.Errorf("key %q folds to %q", key, name)
		}
		if _, ok := out[name]; ok {
			return nil, fmt.Errorf("%q twice", name)
		}
		out[name] = m.val
	}
	return out, nil
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// refString decodes the string literal raw as encoding/json does, and
// refuses one that encoding/json could only read by replacing bytes with
// U+FFFD (invalid UTF-8, lone surrogates): the peek refuses those.
func refString(raw []byte) (string, error) {
	var s string
	if raw[0] != '"' {
		return "", fmt.Errorf("not a string")
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	legit := bytes.Count(raw, []byte("\uFFFD")) + strings.Count(strings.ToLower(string(raw)), `\ufffd`)
	if strings.Count(s, "\uFFFD") > legit {
		return "", fmt.Errorf("not valid UTF-8")
	}
	return s, nil
}

// refSplitter checks structure recursively (bodies in tests are small, and
// depth stops at maxBodyDepth+1).
type refSplitter struct{ b []byte }

func (sp *refSplitter) ws(i int) int {
	for i < len(sp.b) && strings.IndexByte(" \t\r\n", sp.b[i]) >= 0 {
		i++
	}
	return i
}

// str returns the index past the string literal at b[i], scanning escapes
// forward.
func (sp *refSplitter) str(i int) (int, error) {
	for j := i + 1; j < len(sp.b); j++ {
		switch sp.b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string")
}

// object reads the object at b[i] strictly, its members at depth.
func (sp *refSplitter) object(i, depth int) ([]member, int, error) {
	var ms []member
	i = sp.ws(i + 1)
	if i < len(sp.b) && sp.b[i] == '}' {
		return ms, i + 1, nil
	}
	for {
		if i >= len(sp.b) || sp.b[i] != '"' {
			return nil, 0, fmt.Errorf("want key at %d", i)
		}
		k, err := sp.str(i)
		if err != nil {
			return nil, 0, err
		}
		key := sp.b[i:k]
		i = sp.ws(k)
		if i >= len(sp.b) || sp.b[i] != ':' {
			return nil, 0, fmt.Errorf("want ':' at %d", i)
		}
		i = sp.ws(i + 1)
		v, err := sp.value(i, depth, true)
		if err != nil {
			return nil, 0, err
		}
		ms = append(ms, member{key, sp.b[i:v]})
		i = sp.ws(v)
		if i < len(sp.b) && sp.b[i] == ',' {
			i = sp.ws(i + 1)
			continue
		}
		if i < len(sp.b) && sp.b[i] == '}' {
			return ms, i + 1, nil
		}
		return nil, 0, fmt.Errorf("want ',' or '}' at %d", i)
	}
}

// value reads the value at b[i], its containers depth deep: strictly when
// strict (a scalar must be JSON), else by structure only.
func (sp *refSplitter) value(i, depth int, strict bool) (int, error) {
	if depth >= maxBodyDepth {
		return 0, errTooDeep
	}
	if i >= len(sp.b) {
		return 0, fmt.Errorf("want value")
	}
	switch c := sp.b[i]; c {
	case '"':
		return sp.str(i)
	case '{', '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		for j := i + 1; j < len(sp.b); {
			switch d := sp.b[j]; {
			case d == closer:
				return j + 1, nil
			case d == '}' || d == ']':
				return 0, fmt.Errorf("crossed brackets")
			case strings.IndexByte(" \t\r\n,:", d) >= 0:
				j++
			default:
				end, err := sp.value(j, depth+1, false)
				if err != nil {
					return 0, err
				}
				j = end
			}
		}
		return 0, fmt.Errorf("unclosed")
	}
	j := i
	for j < len(sp.b) && strings.IndexByte(" \t\r\n,:{}[]\"", sp.b[j]) < 0 {
		j++
	}
	if strict && !json.Valid(sp.b[i:j]) {
		return 0, fmt.Errorf("bad scalar %q", sp.b[i:j])
	}
	if j == i {
		j++ // a lone byte inside a container: structure only
	}
	return j, nil
}

// agree fails t when the peek and the reference disagree on body.
func agree(t *testing.T, p *peek, body []byte, messages bool) {
	t.Helper()
	err := p.parse(body, messages)
	ref, rerr := refPeek(body, messages)
	switch {
	case err == nil && rerr == nil:
		if string(p.Model) != ref.model || string(p.User) != ref.user || p.HasUser != ref.hasUser ||
			p.Stream != ref.stream || p.HasTools != ref.hasTools {
			t.Fatalf("body %q (messages %v):\n peek model=%q user=%q/%v stream=%v tools=%v\n ref  %+v",
				body, messages, p.Model, p.User, p.HasUser, p.Stream, p.HasTools, ref)
		}
		// encoding/json itself, where it reads the whole body, reads the
		// same (duplicates and folded keys were refused, so last-wins
		// and first-wins agree).
		var v struct {
			Model    string
			User     *string
			Stream   bool
			Tools    []json.RawMessage
			Metadata *struct {
				UserID *string `json:"user_id"`
			}
		}
		if json.Unmarshal(body, &v) == nil {
			user, hasUser := v.User, v.User != nil
			if messages {
				user, hasUser = nil, false
				if v.Metadata != nil && v.Metadata.UserID != nil {
					user, hasUser = v.Metadata.UserID, true
				}
			}
			if v.Model != string(p.Model) || hasUser != p.HasUser || (hasUser && *user != string(p.User)) ||
				v.Stream != p.Stream || (len(v.Tools) > 0) != p.HasTools {
				t.Fatalf("body %q (messages %v): encoding/json reads %+v, the peek model=%q user=%q", body, messages, v, p.Model, p.User)
			}
		}
	case err == nil:
		t.Fatalf("body %q (messages %v): peek accepts (model %q), reference refuses: %v", body, messages, p.Model, rerr)
	case rerr == nil:
		t.Fatalf("body %q (messages %v): peek refuses (%v), reference accepts %+v", body, messages, err, ref)
	case !strings.HasPrefix(err.Error(), "request body") && !strings.HasPrefix(err.Error(), `"`):
		t.Fatalf("body %q: error %q is not a client message", body, err)
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
	`"x"`, `"model "`, `"Model"`, `"us\"er"`, `""`, `"model"`, `"stream"`, `"metadata"`, `"metadata"`, `"user_id"`, `"user_id"`,
	`"USER_ID"`, `"ſtream"`, `"\u004dodel"`, `"metadatA"`, `"user_\u0069d"`, `"\ud800"`}

// genObject writes a random object; top objects draw mostly the routing keys.
func genObject(r *rand.Rand, b *strings.Builder, depth int, top bool) {
	b.WriteByte('{')
	n := r.IntN(4)
	if top {
		n = 1 + r.IntN(5)
		// Mostly a model first, so that many bodies get past it.
		if r.IntN(5) > 0 {
			b.WriteString(`"model":` + genJSONString(r) + `,`)
		}
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

// The peek reads what the reference reads and refuses what it refuses, on
// random bodies shaped like requests (nesting, escapes, routing keys and
// their case-folded spellings at every level, repeats), on those bodies cut
// short or with a byte changed, and on nesting around the depth limit; in
// both modes.
func TestPeekAgreesWithEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := &peek{}
	valid, accepted := 0, 0
	for range 20000 {
		var b strings.Builder
		genObject(r, &b, 4, true)
		body := []byte(b.String())
		if json.Valid(body) {
			valid++
		}
		for _, messages := range []bool{false, true} {
			agree(t, p, body, messages)
			if p.parse(body, messages) == nil {
				accepted++
			}
			if len(body) > 1 {
				agree(t, p, body[:r.IntN(len(body))], messages)
				mut := append([]byte(nil), body...)
				mut[r.IntN(len(mut))] = `"\{}[],: x1`[r.IntN(11)]
				agree(t, p, mut, messages)
			}
		}
	}
	t.Logf("%d of 20000 bodies valid JSON, %d of 40000 readings accepted", valid, accepted)
	if valid < 15000 || accepted < 6000 {
		t.Fatalf("%d of 20000 generated bodies were valid JSON, %d of 40000 readings accepted: the generator is broken", valid, accepted)
	}
	for _, n := range []int{298, 299, 300, 301} {
		for _, inner := range []string{"", "1", `"s"`, "[]", "{}"} {
			for _, messages := range []bool{false, true} {
				agree(t, p, []byte(`{"model":"m","x":`+strings.Repeat("[", n)+inner+strings.Repeat("]", n)+`}`), messages)
				agree(t, p, []byte(`{"model":"m","x":`+strings.Repeat(`{"a":`, n)+`1`+strings.Repeat("}", n)+`}`), messages)
				agree(t, p, []byte(`{"model":"m","metadata":{"x":`+strings.Repeat("[", n)+inner+strings.Repeat("]", n)+`}}`), messages)
			}
		}
	}
}

func FuzzPeekAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"model":"m"}`, `{"model":"m","stream":true,"tools":[1]}`, `[]`, `{"model":1}`,
		`{"model":"m"} x`, `{"mod\u0065l":"a\"b","user":"\\","tools":[ ]}`, `{"x":"\\\"}","model":"m"}`,
		`{"model":"m","x":[[[{"a":"]"}]]]}`, "{\"model\":\"a\x01\"}", `{"model":"m","model":"n"}`,
		`{"model":"m","MODEL":"n"}`, `{"model":"m","ſtream":true}`, `{"model":"m","metadata":{"user_id":"u","USER_ID":"v"}}`,
		`{"model":"m","metadata":{"user_id":null}}`, `{"model":"m","metadata":null,"user":"x"}`, `{"model":"\ud800"}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, messages bool) {
		agree(t, &peek{}, b, messages)
	})
}
