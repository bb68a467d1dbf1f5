package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/bench/harness"
)

// bodySizes are the request bodies of the body-size rows: what a chat with
// history, a RAG prompt or a coding agent's turn sends.
var bodySizes = []int{1 << 10, 16 << 10, 128 << 10, 1 << 20}

// sizeName is "16 KB" for 16<<10.
func sizeName(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + " MB"
	}
	return strconv.Itoa(n>>10) + " KB"
}

// bodySizes measures the bare proxy and the 1-rule Switchyard, in
// alternation, with realistic chat bodies of each size.
func (b *bench) bodySizes() {
	for _, n := range bodySizes {
		b.sizeGroup(n, "")
	}
}

// sizeGroup compares the bare proxy and the 1-rule Switchyard on a body of
// n bytes (the 74-byte chat body when n is 0); suffix ends the row names.
func (b *bench) sizeGroup(n int, suffix string) {
	body, label := chatBody, ""
	if n > 0 {
		body, label = chatBodyOfSize(n), ", "+sizeName(n)+" body"
	}
	bare := &harness.Row{Name: rowBare + label + suffix, CPUSeconds: -1, Mallocs: -1}
	sy := &harness.Row{Name: rowSy1 + label + suffix, CPUSeconds: -1, Mallocs: -1, Bare: bare}
	b.rep.Rows = append(b.rep.Rows, bare, sy)
	group := []*contender{
		b.viaProxy(bare, body, func() (*proxy, error) { return b.startBare(b.primary.Addr) }),
		b.viaProxy(sy, body, func() (*proxy, error) { return b.oneRule(b.primary) }),
	}
	countUpstream(group, b.primary.Addr)
	b.compare(group, nil)
	checkUpstream(group)
}

// unpinnedRows compares the proxies once more at 74 bytes and 1 KB, unpinned
// at their default GOMAXPROCS as a user deploys them (the mocks and the
// driver keep their placement).
func (b *bench) unpinnedRows() {
	if b.proxyCPUs == nil {
		return // nothing was pinned in the first place
	}
	b.unpinned = true
	defer func() { b.unpinned = false }()
	b.sizeGroup(0, " (unpinned)")
	b.sizeGroup(1<<10, " (unpinned)")
}

// chatBodyOfSize is a chat request of about n bytes for the bench model: a
// system prompt, then alternating user and assistant turns of prose with
// escaped line breaks and quotes, and a code block.
func chatBodyOfSize(n int) []byte {
	var s strings.Builder
	s.WriteString(`{"model":"bench-model","messages":[{"role":"system","content":"You are a careful coding assistant.\nAnswer in Markdown."}`)
	prose := "The gateway reads the request body once, routes on four fields, and forwards the bytes untouched. "
	code := `func route(b []byte) error {\n\tif len(b) == 0 {\n\t\treturn errEmpty\n\t}\n\treturn nil\n}\n`
	for i := 0; s.Len() < n-120; i++ {
		role := [2]string{"user", "assistant"}[i%2]
		fmt.Fprintf(&s, `,{"role":%q,"content":"%sAs the operator said, \"pin it\" (turn %d).\n%s"}`, role, strings.Repeat(prose, 4), i, strings.Repeat(code, 3))
	}
	s.WriteString(`],"temperature":0.2,"max_tokens":256}`)
	return []byte(s.String())
}
