package config

// Typed value decoders of phase 1: each reads one value of the syntax tree
// into a Config field, reporting a wrongly typed value with its path.

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// value resolves n to the node that holds its value; nil when the value
// is absent, null or an alias reported as broken.
func (d *decoder) value(n ast.Node, path string) ast.Node {
	if n == nil {
		return nil
	}
	r, _ := d.resolve(n, path)
	if r == nil || isNull(r) {
		return nil
	}
	return r
}

// str decodes a scalar as text, expanding ${VAR} references in strings.
// ok is false when the value is absent or null, or reported as wrong.
func (d *decoder) str(n ast.Node, path, what string) (string, bool) {
	r := d.value(n, path)
	if r == nil {
		return "", false
	}
	s, ok := scalarText(r)
	if !ok {
		d.addAt(nodePos(n), path, "got %s; want %s", describe(r), what)
		return "", false
	}
	switch r.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		out, probs := expand(s, d.lookup, isSecret(path))
		for _, p := range probs {
			d.addAt(nodePos(n), path, "%s", p)
		}
		if len(probs) > 0 {
			return "", false
		}
		return out, true
	}
	return s, true
}

// isSecret reports whether path holds a credential, whose text no problem
// message may quote (problems are printed and logged).
func isSecret(path string) bool {
	i := strings.LastIndexByte(path, '.')
	switch path[i+1:] {
	case "api_key", "aws_access_key_id", "aws_secret_access_key", "aws_session_token", "azure_client_secret", "credentials_json":
		return true
	case "url":
		return strings.HasPrefix(path, "quotas.") // may hold a Redis password
	case "key":
		return strings.HasPrefix(path, "auth.") || path == "admin.key" // a client or admin key, not a condition's key
	}
	return false
}

// setStr decodes m[key] into *dst when present.
func (d *decoder) setStr(m map[string]ast.Node, path, key string, dst *string) {
	if s, ok := d.str(m[key], join(path, key), "a string"); ok {
		*dst = s
	}
}

// setInt decodes m[key] into *dst when present. A string is accepted only
// when it came from a ${VAR} reference, so `attempts: ${RETRIES}` works.
func (d *decoder) setInt(m map[string]ast.Node, path, key string, dst *int) {
	if v, ok := d.integer(m[key], join(path, key)); ok {
		*dst = v
	}
}

func (d *decoder) integer(n ast.Node, path string) (int, bool) {
	r := d.value(n, path)
	if r == nil {
		return 0, false
	}
	switch v := r.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			if x >= math.MinInt && x <= math.MaxInt {
				return int(x), true
			}
		case uint64:
			if x <= math.MaxInt {
				return int(x), true
			}
		}
		d.addAt(nodePos(n), path, "%s is out of range; want an integer that fits in %d bits", v.Token.Value, strconv.IntSize)
		return 0, false
	case *ast.StringNode:
		if isDigits(v.Value) {
			// go-yaml turns integers too big for int64 into strings.
			d.addAt(nodePos(n), path, "%s is out of range; want an integer that fits in %d bits", quoteShort(v.Value), strconv.IntSize)
			return 0, false
		}
		if strings.Contains(v.Value, "${") {
			s, ok := d.str(n, path, "an integer")
			if !ok {
				return 0, false
			}
			i, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				d.addAt(nodePos(n), path, "%s (after ${} expansion) is not an integer; want an integer", quoteShort(s))
				return 0, false
			}
			return i, true
		}
	}
	d.addAt(nodePos(n), path, "got %s; want an integer", describe(r))
	return 0, false
}

func isDigits(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// setBool decodes m[key] into *dst when present.
func (d *decoder) setBool(m map[string]ast.Node, path, key string, dst *bool) {
	p, n := join(path, key), m[key]
	r := d.value(n, p)
	if r == nil {
		return
	}
	if b, ok := r.(*ast.BoolNode); ok {
		*dst = b.Value
		return
	}
	if sn, ok := r.(*ast.StringNode); ok && strings.Contains(sn.Value, "${") {
		if s, ok := d.str(n, p, "true or false"); ok {
			switch s {
			case "true":
				*dst = true
				return
			case "false":
				*dst = false
				return
			}
			d.addAt(nodePos(n), p, "%s (after ${} expansion) is not a boolean; want true or false", quoteShort(s))
		}
		return
	}
	d.addAt(nodePos(n), p, "got %s; want true or false", describe(r))
}

// setDuration decodes m[key], a Go duration string, into *dst when present.
func (d *decoder) setDuration(m map[string]ast.Node, path, key string, dst *time.Duration) {
	p, n := join(path, key), m[key]
	r := d.value(n, p)
	if r == nil {
		return
	}
	switch r.(type) {
	case *ast.StringNode:
	case *ast.IntegerNode, *ast.FloatNode:
		d.addAt(nodePos(n), p, "got %s; want a duration with a unit, such as \"60s\" or \"1m30s\"", describe(r))
		return
	default:
		d.addAt(nodePos(n), p, "got %s; want a duration such as \"60s\" or \"1m30s\"", describe(r))
		return
	}
	s, ok := d.str(n, p, "a duration")
	if !ok {
		return
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.addAt(nodePos(n), p, "%s is not a duration; want a Go duration such as \"60s\" or \"1m30s\"", quoteShort(s))
		return
	}
	*dst = v
}

// setStrList decodes a list of strings into *dst when present; an explicit
// empty list yields a non-nil empty slice.
func (d *decoder) setStrList(m map[string]ast.Node, path, key, what string, dst *[]string) {
	p := join(path, key)
	items, ok := d.list(m[key], p, "a list of "+what)
	if !ok {
		return
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		// A wrong entry is kept as "" so indexes stay aligned with the
		// file; the semantic pass reports a null entry as empty and skips
		// one phase 1 reported.
		s, _ := d.str(it, index(p, i), what)
		out = append(out, s)
	}
	*dst = out
}

// setIntList decodes a list of integers into *dst when present.
func (d *decoder) setIntList(m map[string]ast.Node, path, key string, dst *[]int) {
	p := join(path, key)
	items, ok := d.list(m[key], p, "a list of integers")
	if !ok {
		return
	}
	out := make([]int, 0, len(items))
	for i, it := range items {
		if v, ok := d.integer(it, index(p, i)); ok {
			out = append(out, v)
		} else {
			out = append(out, 0) // keep indexes aligned; already reported or null
			if r, _ := d.resolve(it, index(p, i)); r != nil && isNull(r) {
				d.problemf(index(p, i), "got null; want an integer")
			}
		}
	}
	*dst = out
}

// setStrMap decodes a mapping of strings to strings into *dst when present.
// Entry paths are path["key"].
func (d *decoder) setStrMap(m map[string]ast.Node, path, key string, dst *map[string]string) {
	p, n := join(path, key), m[key]
	r := d.value(n, p)
	if r == nil {
		return
	}
	switch r.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		d.addAt(nodePos(n), p, "got %s; want a mapping of model ids", describe(r))
		return
	}
	out := map[string]string{}
	for _, e := range d.entries(r, p, 0, true) {
		ep := p + "[" + strconv.Quote(e.key) + "]"
		d.pos[ep] = e.keyPos
		s, _ := d.str(e.val, ep, "a model id") // null is "", reported as empty later
		out[e.key] = s
	}
	*dst = out
}
