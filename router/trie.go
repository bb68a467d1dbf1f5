package router

import (
	"bytes"
	"sort"
)

// noRule marks "no rule": larger than every real rule index, so the lowest
// index wins with a plain comparison.
const noRule = int32(1<<31 - 1)

// prefixTrie is a compressed (radix) trie over byte strings. Each node holds
// the lowest value of the strings that end there; lowest walks a key and
// returns the lowest value among all stored strings that are prefixes of it.
//
// Nodes live in one slice and refer to each other by index, so a walk touches
// no pointers besides that slice and allocates nothing. A prefixTrie is
// immutable after build and safe for concurrent use.
type prefixTrie struct {
	nodes []trieNode
}

type trieNode struct {
	// label is the edge from the parent ("" for the root).
	label string
	// val is the lowest value stored for the string ending here, or noRule.
	val int32
	// min is the lowest val in this node's subtree (itself included); a walk
	// stops descending once it cannot find anything lower than it has.
	min int32
	// first[i] is the first byte of child kids[i]'s label; no two equal.
	first []byte
	kids  []int32
}

// lowest returns the lowest value among the stored strings that are
// prefixes of key (the empty string included), or noRule.
func (t *prefixTrie) lowest(key []byte) int32 {
	return t.lowestBelow(key, noRule)
}

// lowestBelow is lowest restricted to values below bound: it returns bound
// when nothing lower matches, and stops as soon as no subtree on the path
// can beat the best value found so far.
func (t *prefixTrie) lowestBelow(key []byte, bound int32) int32 {
	if len(t.nodes) == 0 {
		return bound
	}
	best := bound
	n := &t.nodes[0]
	for i := 0; ; {
		if n.val < best {
			best = n.val
		}
		if i == len(key) {
			return best
		}
		j := bytes.IndexByte(n.first, key[i])
		if j < 0 {
			return best
		}
		c := &t.nodes[n.kids[j]]
		if c.min >= best {
			return best
		}
		rest := key[i:]
		if len(rest) < len(c.label) || string(rest[:len(c.label)]) != c.label {
			return best
		}
		i += len(c.label)
		n = c
	}
}

// trieBuilder accumulates strings for a prefixTrie. Not safe for
// concurrent use.
type trieBuilder struct {
	root bnode
	size int
}

type bnode struct {
	val  int32
	kids map[byte]*bnode
}

// add stores s with value v, keeping the lowest value when s repeats.
func (b *trieBuilder) add(s string, v int32) {
	if b.size == 0 {
		b.root.val = noRule
	}
	b.size++
	n := &b.root
	for i := 0; i < len(s); i++ {
		if n.kids == nil {
			n.kids = make(map[byte]*bnode)
		}
		c := n.kids[s[i]]
		if c == nil {
			c = &bnode{val: noRule}
			n.kids[s[i]] = c
		}
		n = c
	}
	if v < n.val {
		n.val = v
	}
}

// build returns the compressed trie of everything added. An empty builder
// gives an empty trie whose walks find nothing.
func (b *trieBuilder) build() prefixTrie {
	var t prefixTrie
	if b.size == 0 {
		return t
	}
	t.nodes = append(t.nodes, trieNode{val: b.root.val})
	t.fill(0, &b.root)
	return t
}

// fill emits the children of builder node bn under flat node at, merging
// chains of value-less single-child nodes into one labelled edge.
func (t *prefixTrie) fill(at int32, bn *bnode) int32 {
	keys := make([]byte, 0, len(bn.kids))
	for k := range bn.kids {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	min := t.nodes[at].val
	first := make([]byte, 0, len(keys))
	kids := make([]int32, 0, len(keys))
	for _, k := range keys {
		label := []byte{k}
		c := bn.kids[k]
		for c.val == noRule && len(c.kids) == 1 {
			for k2, c2 := range c.kids {
				label = append(label, k2)
				c = c2
			}
		}
		idx := int32(len(t.nodes))
		t.nodes = append(t.nodes, trieNode{label: string(label), val: c.val})
		if m := t.fill(idx, c); m < min {
			min = m
		}
		first = append(first, k)
		kids = append(kids, idx)
	}
	n := &t.nodes[at]
	n.first, n.kids, n.min = first, kids, min
	return min
}
