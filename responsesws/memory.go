package responsesws

// memory is what a socket keeps of its last response, so that a
// continuation naming it (previous_response_id, only the new items,
// store: false: how Codex continues a turn) can be sent over HTTP with its
// whole input, to native and translated members alike (docs/api.md,
// Responses over WebSocket). Only the last response is kept, in process
// memory, and dropped with the socket. Owned by the socket's worker.
type memory struct {
	// id is the last response's id; "" before the first.
	id string
	// state says what a continuation of id gets.
	state memState
	// items are the last response's whole input and output items,
	// comma-separated JSON values, when state is memHeld.
	items []byte
}

type memState uint8

const (
	// memNone: nothing is known of id's context; a continuation of it is
	// sent as is (the HTTP rules: the member's stored responses, the
	// ownership check).
	memNone memState = iota
	// memHeld: items hold id's context; a continuation is expanded.
	memHeld
	// memDropped: id's context passed the bound and was dropped; a
	// continuation is refused (400 previous_response_not_supported).
	memDropped
)

// bound is the most bytes a memory holds: 4 x max_message_bytes, and never
// more than max_request_bytes, since a continuation sends the memory in a
// request (a larger one could only be refused 413, and a chain of
// warm-ups, which make no request, would grow it with nothing checking).
func bound(l Limits) int {
	b := 4 * l.MaxMessageBytes
	if l.MaxRequestBytes > 0 {
		b = min(b, l.MaxRequestBytes)
	}
	return b
}

// continuation says what to do with a create naming previous: expand it
// with the items held, refuse it, or send it as is.
func (m *memory) continuation(c *create) memState {
	if !c.hasPrevious || c.previous != m.id || m.id == "" {
		return memNone
	}
	return m.state
}

// remember makes the response id, whose whole context is items (input then
// output), the last one; over (items passed the bound while collected)
// or items longer than limit drop it. The memory takes items.
func (m *memory) remember(id string, items []byte, over bool, limit int) {
	m.id = id
	if over || len(items) > limit {
		m.state, m.items = memDropped, nil
		return
	}
	m.state, m.items = memHeld, items
}

// chained makes id the last response with a context held upstream (its
// request named a previous_response_id the socket did not expand).
func (m *memory) chained(id string) {
	m.id, m.state, m.items = id, memNone, nil
}

// forget records that the last response (id) cannot be continued from
// memory: it failed, or its context is unknown.
func (m *memory) forget(id string) {
	m.chained(id)
}
