//go:build !race

package provider

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// Filtering Claude Code's flags into Vertex's header allocates nothing:
// the list is built on the stack and copied into the request's header.
func TestVertexBetasAlloc(t *testing.T) {
	c := messagesCall(`{"model":"claude","max_tokens":8,"messages":[]}`, true, false, "anthropic-beta", claudeCode2_1_197)
	ep := &Endpoint{}
	var h fasthttp.RequestHeader
	if err := setVertexBetas(&h, ep, c, nil); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := setVertexBetas(&h, ep, c, nil); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%.0f allocations a request", n)
	}
}
