package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// This file is phase 1 of loading: a strict decode that walks the YAML syntax
// tree itself instead of using yaml.Unmarshal. Walking the tree lets the
// loader report every unknown key, duplicate key and wrongly typed value with
// its line, column and path in one pass (a decoder stops at the first), keep
// the literal text of scalars (`value: 1.0` is "1.0", not 1), and tell an
// absent key from a zero value without pointer fields in the public types.
//
// Anchors, aliases, tags and merge keys (<<: *defaults) are supported; null
// (`key:` or `key: ~`) means the same as leaving the key out.

// maxResolve bounds alias and merge-key chains, so a self-referencing anchor
// (`a: &x [*x]`, `b: &y {<<: *y}`) is reported instead of looping.
const maxResolve = 16

type pos struct{ line, col int }

// decoder holds the state of one load: the problems found so far and, for
// every path seen, where it is in the file (the semantic pass reports by path).
type decoder struct {
	file    string
	lookup  func(string) (string, bool)
	probs   []Problem
	pos     map[string]pos      // path -> position of its value (of its key when null)
	has     map[string]bool     // path -> present with a non-null value
	anchors map[string]ast.Node // anchor name -> anchored node
	root    pos
	// decodeBad holds the paths phase 1 reported, so the semantic pass does
	// not report the same value twice ("got a list" then "is empty").
	decodeBad map[string]bool
	semantic  bool // phase 1 is over
	// budget is how many more mapping entries and list items phase 1 may
	// visit. Aliases and merge keys can make a small file expand
	// exponentially ("billion laughs"); past the budget decoding stops with
	// one problem instead of hanging.
	budget int
	// baseFromEnv names the <PROVIDER>_BASE_URL variable a target's base_url
	// came from, by target index.
	baseFromEnv map[int]string
	// interned holds one copy of each short string that many conditions
	// repeat (key, field and target names), so the Config a gateway keeps
	// references one copy instead of one per condition. Built lazily.
	interned map[string]string
	// unproven skips the residency proof (LoadUnproven).
	unproven bool
}

// intern returns the decoder's copy of s (s itself the first time).
func (d *decoder) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := d.interned[s]; ok {
		return v
	}
	if d.interned == nil {
		d.interned = make(map[string]string)
	}
	d.interned[s] = s
	return s
}

// addKeyAt reports a problem with a key itself (unknown, duplicate): it does
// not hide later problems with the value the path keeps.
func (d *decoder) addKeyAt(p pos, path, format string, args ...any) {
	d.probs = append(d.probs, Problem{File: d.file, Line: p.line, Col: p.col, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (d *decoder) addAt(p pos, path, format string, args ...any) {
	if !d.semantic {
		d.decodeBad[path] = true
	} else if d.decodeBad[path] {
		return
	}
	d.probs = append(d.probs, Problem{File: d.file, Line: p.line, Col: p.col, Path: path, Message: fmt.Sprintf(format, args...)})
}

// problemf reports a problem at path, positioned at the path's value or, when
// the path is absent from the file, at its nearest present ancestor.
func (d *decoder) problemf(path, format string, args ...any) {
	d.addAt(d.at(path), path, format, args...)
}

func (d *decoder) at(path string) pos {
	for p := path; p != ""; {
		if x, ok := d.pos[p]; ok {
			return x
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return d.root
}

// maxValues is the decode budget: far beyond any real config, small enough
// to decode in well under a second.
const maxValues = 200_000

// spend takes n from the budget; false (reported once) when it runs out.
func (d *decoder) spend(n int, at ast.Node, path string) bool {
	if d.budget < 0 {
		return false
	}
	d.budget -= n
	if d.budget < 0 {
		d.addAt(nodePos(at), path, "aliases and merge keys expand the config beyond %d values; want a config without self-multiplying aliases", maxValues)
		return false
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func nodePos(n ast.Node) pos {
	switch v := n.(type) {
	case nil:
		return pos{}
	case *ast.MappingNode:
		// A block mapping's own token is its first ":"; point at the first key.
		if len(v.Values) > 0 && !v.IsFlowStyle {
			return nodePos(v.Values[0])
		}
	case *ast.MappingValueNode:
		if v.Key != nil {
			return nodePos(v.Key)
		}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return pos{}
	}
	return pos{tk.Position.Line, tk.Position.Column}
}

func (d *decoder) collectAnchors(n ast.Node) {
	ast.Walk(anchorVisitor(d.anchors), n)
}

type anchorVisitor map[string]ast.Node

func (v anchorVisitor) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
		v[a.Name.GetToken().Value] = a.Value
	}
	return v
}

// resolve follows anchors, aliases and tags to the node that holds the value.
// It returns nil (after reporting) for an unknown or circular alias. tag is
// the innermost explicit tag ("!!str"), "" when none.
func (d *decoder) resolve(n ast.Node, path string) (res ast.Node, tag string) {
	for range maxResolve {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			if v.Start != nil {
				tag = v.Start.Value
			}
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if v.Value != nil && v.Value.GetToken() != nil {
				name = v.Value.GetToken().Value
			}
			target, ok := d.anchors[name]
			if !ok {
				d.addAt(nodePos(v), path, "unknown alias *%s; want an anchor &%s defined in the file", name, name)
				return nil, ""
			}
			n = target
		case *ast.MappingKeyNode:
			n = v.Value
		default:
			return n, tag
		}
	}
	d.addAt(nodePos(n), path, "alias chain is circular or deeper than %d; want an alias to a plain value", maxResolve)
	return nil, ""
}

// describe names a resolved node's kind for "got X; want Y" messages.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode:
		return "the string " + quoteShort(v.Value)
	case *ast.LiteralNode:
		return "a block string"
	case *ast.IntegerNode:
		return "the integer " + v.Token.Value
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "the number " + n.GetToken().Value
	case *ast.BoolNode:
		return "the boolean " + v.Token.Value
	case *ast.NullNode:
		return "null"
	}
	return "a YAML " + n.Type().String()
}

func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return ok
}

// entry is one key of a mapping.
type entry struct {
	key    string
	keyPos pos
	val    ast.Node // unresolved
}

// entries lists a resolved mapping's keys in order, explicit keys first and
// then those brought in by merge keys that are not already set. Duplicate
// explicit keys and non-scalar keys are reported and skipped. userKeys
// bracket-quotes every key in paths (model_map["gpt-4o"]).
func (d *decoder) entries(n ast.Node, path string, depth int, userKeys bool) []entry {
	var values []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		values = v.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{v}
	default:
		return nil
	}
	if !d.spend(len(values), n, path) {
		return nil
	}
	var out []entry
	first := map[string]pos{}
	var merges []ast.Node
	for _, mv := range values {
		if mv == nil || mv.Key == nil {
			continue
		}
		kp := nodePos(mv.Key)
		if mv.Key.IsMergeKey() {
			merges = append(merges, mv.Value)
			continue
		}
		kn, _ := d.resolve(mv.Key, path)
		if kn == nil {
			continue
		}
		key, ok := scalarText(kn)
		if !ok {
			d.addAt(kp, path, "got %s as a key; want a string key", describe(kn))
			continue
		}
		if p, dup := first[key]; dup {
			kpath := keyPath(path, key)
			if userKeys {
				kpath = path + "[" + strconv.Quote(key) + "]"
			}
			d.addKeyAt(kp, kpath, "duplicate key %q (first at line %d); a key may appear once in a mapping", key, p.line)
			continue
		}
		first[key] = kp
		out = append(out, entry{key: key, keyPos: kp, val: mv.Value})
	}
	if depth >= maxResolve && len(merges) > 0 {
		d.addAt(nodePos(n), path, "merge keys nest deeper than %d; want a plain mapping", maxResolve)
		return out
	}
	for _, m := range merges {
		mn, _ := d.resolve(m, path)
		if mn == nil {
			continue
		}
		var srcs []ast.Node
		switch v := mn.(type) {
		case *ast.MappingNode, *ast.MappingValueNode:
			srcs = []ast.Node{v}
		case *ast.SequenceNode:
			for _, s := range v.Values {
				if sn, _ := d.resolve(s, path); sn != nil {
					srcs = append(srcs, sn)
				}
			}
		default:
			d.addAt(nodePos(m), path, "got %s after <<; want a mapping or a list of mappings", describe(mn))
		}
		for _, s := range srcs {
			switch s.(type) {
			case *ast.MappingNode, *ast.MappingValueNode:
			default:
				d.addAt(nodePos(m), path, "got %s after <<; want a mapping or a list of mappings", describe(s))
				continue
			}
			for _, e := range d.entries(s, path, depth+1, userKeys) {
				if _, set := first[e.key]; !set {
					first[e.key] = e.keyPos
					out = append(out, e)
				}
			}
		}
	}
	return out
}

// keyPath is the path of a fixed key (a.b) or a user-chosen one (a["x.y"]).
func keyPath(path, key string) string {
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return path + "[" + strconv.Quote(key) + "]"
		}
	}
	return join(path, key)
}

// scalarText returns a resolved scalar's text: strings unquoted, numbers and
// booleans as written.
func scalarText(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value == nil {
			return "", true
		}
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode, *ast.NullNode:
		return n.GetToken().Value, true
	}
	return "", false
}

// fields decodes a mapping with a fixed set of keys. It returns key -> value
// for the keys present; unknown keys are reported. A null or absent mapping
// yields an empty map; a non-mapping is reported and yields nil.
func (d *decoder) fields(n ast.Node, path, what string, keys ...string) map[string]ast.Node {
	out := map[string]ast.Node{}
	if n == nil {
		return out
	}
	if _, ok := d.pos[path]; !ok {
		d.pos[path] = nodePos(n)
	}
	r, _ := d.resolve(n, path)
	if r == nil || isNull(r) {
		return out
	}
	switch r.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		if path == "" {
			d.addAt(nodePos(n), path, "got %s; want a mapping of %s", describe(r), strings.Join(keys, ", "))
		} else {
			d.addAt(nodePos(n), path, "got %s; want %s (a mapping)", describe(r), what)
		}
		return nil
	}
	for _, e := range d.entries(r, path, 0, false) {
		if !contains(keys, e.key) {
			d.addKeyAt(e.keyPos, keyPath(path, e.key), "unknown key %q in %s; want %s", e.key, what, strings.Join(keys, ", "))
			continue
		}
		sub := join(path, e.key)
		// A scalar or flow value is located at the value; a block mapping or
		// list, null and an alias at the key, where a reader looks for them.
		vp := nodePos(e.val)
		switch v := e.val.(type) {
		case *ast.MappingNode:
			if !v.IsFlowStyle {
				vp = e.keyPos
			}
		case *ast.SequenceNode:
			if !v.IsFlowStyle {
				vp = e.keyPos
			}
		case *ast.NullNode, *ast.AliasNode, *ast.AnchorNode:
			vp = e.keyPos
		}
		if vp.line == 0 {
			vp = e.keyPos
		}
		d.pos[sub] = vp
		if vr, _ := d.resolve(e.val, sub); vr != nil && !isNull(vr) {
			d.has[sub] = true
		}
		out[e.key] = e.val
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// list decodes a list; ok is false when the value is absent, null or not a
// list (reported).
func (d *decoder) list(n ast.Node, path, what string) (items []ast.Node, ok bool) {
	if n == nil {
		return nil, false
	}
	r, _ := d.resolve(n, path)
	if r == nil || isNull(r) {
		return nil, false
	}
	seq, isSeq := r.(*ast.SequenceNode)
	if !isSeq {
		d.addAt(nodePos(n), path, "got %s; want %s", describe(r), what)
		return nil, false
	}
	if !d.spend(len(seq.Values), n, path) {
		return nil, false
	}
	for i, it := range seq.Values {
		d.pos[index(path, i)] = nodePos(it)
	}
	return seq.Values, true
}
