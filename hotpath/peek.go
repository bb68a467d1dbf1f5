package hotpath

import (
	"errors"
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
)

// peek is what routing reads of a request body (SPEC §4.1): the four fields
// model, user, stream and tools, and nothing else. The body itself is
// forwarded untouched.
//
// A peek lives in a pooled per-request scratch and is not safe for
// concurrent use. Model and User point into the peek's parser and are valid
// until the next parse; nothing of them is kept after the request.
type peek struct {
	json fastjson.Parser

	// Model is the "model" string, unescaped; never empty after a
	// successful parse.
	Model []byte
	// User is the "user" string; HasUser is false when the body has none.
	User    []byte
	HasUser bool
	// Stream is the "stream" boolean (absent = false).
	Stream bool
	// HasTools is true when "tools" is a non-empty array.
	HasTools bool

	// seen records which of the four fields were visited, to refuse
	// duplicates; err carries a failure out of the Visit callback.
	seen uint8
	err  error
}

// Bits of peek.seen.
const (
	seenModel uint8 = 1 << iota
	seenUser
	seenStream
	seenTools
)

var errEmptyBody = errors.New("request body is empty; want a JSON object with a \"model\" field")

// parse reads body's routing fields. The body must be exactly one JSON
// object (whitespace around it allowed, nothing else after it) with a
// non-empty string "model"; "stream" absent or boolean; "user" absent or a
// string; "tools" absent, null or an array. A key that names one of the four
// fields twice is refused: the gateway would route on one reading while the
// upstream might act on the other.
//
// Every error message is meant for the client as a 400 invalid_request.
// A successful parse allocates nothing once the parser is warm.
func (p *peek) parse(body []byte) error {
	p.Model, p.User = nil, nil
	p.HasUser, p.Stream, p.HasTools = false, false, false
	p.seen, p.err = 0, nil

	if len(body) == 0 {
		return errEmptyBody
	}
	// fastjson's Parser is lenient (control characters in strings, some
	// malformed numbers); Validate is strict JSON and refuses trailing
	// bytes. Neither allocates on success. The upstream would refuse such a
	// body anyway, but routing must not act on a body nobody agrees on.
	if err := fastjson.ValidateBytes(body); err != nil {
		return fmt.Errorf("request body is not valid JSON: %s", err)
	}
	v, err := p.json.ParseBytes(body)
	if err != nil {
		// Unreachable after Validate; kept so a fastjson change cannot turn
		// into a panic.
		return fmt.Errorf("request body is not valid JSON: %s", err)
	}
	if t := v.Type(); t != fastjson.TypeObject {
		return fmt.Errorf("request body must be a JSON object, not %s", router.JSONTypeName(t))
	}
	obj, _ := v.Object() // cannot fail: v is an object
	obj.Visit(p.visit)
	if p.err != nil {
		err := p.err
		p.err = nil
		return err
	}
	if p.seen&seenModel == 0 {
		return errors.New(`request body has no "model"; it must name the model as a string`)
	}
	return nil
}

// visit checks one top-level entry; it is Object.Visit's callback.
func (p *peek) visit(key []byte, v *fastjson.Value) {
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
		p.Model, _ = v.StringBytes() // cannot fail: v is a string
		if len(p.Model) == 0 {
			p.err = errors.New(`"model" must not be empty`)
		}
	case seenUser:
		if t != fastjson.TypeString {
			p.err = fmt.Errorf(`"user" must be a string, not %s`, router.JSONTypeName(t))
			return
		}
		p.User, _ = v.StringBytes()
		p.HasUser = true
	case seenStream:
		switch t {
		case fastjson.TypeTrue:
			p.Stream = true
		case fastjson.TypeFalse:
		default:
			p.err = fmt.Errorf(`"stream" must be a boolean, not %s`, router.JSONTypeName(t))
		}
	case seenTools:
		switch t {
		case fastjson.TypeNull:
		case fastjson.TypeArray:
			a, _ := v.Array() // cannot fail: v is an array
			p.HasTools = len(a) > 0
		default:
			p.err = fmt.Errorf(`"tools" must be an array, not %s`, router.JSONTypeName(t))
		}
	}
}
