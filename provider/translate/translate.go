// Package translate turns the two client APIs a member may not speak, the
// Anthropic Messages API and the OpenAI Responses API, into OpenAI's chat
// completions form and back, so that every member that serves chat serves
// them too (docs/providers.md, Translation). One translator per pair of
// shapes (messages.go, responses.go), each pure over bytes: request in,
// request out; answer in, answer out. A stream translator is a small state
// machine fed one chat chunk at a time that writes the client's events.
//
// The package knows nothing of providers, targets or the walk: package
// provider wraps a member's chat adapter with these functions, so a native
// path is never translated.
package translate

// Options says what the chat request is for.
type Options struct {
	// Model is the model id written into the chat request. Package
	// provider passes the id sent upstream (model_map applied), so the
	// chat adapter's pass-through sends the body without rewriting it.
	Model []byte
	// MaxCompletionTokens writes the output limit as max_completion_tokens
	// (openai, azure) instead of max_tokens (every other member).
	MaxCompletionTokens bool
	// Stream asks for a stream, with stream_options.include_usage so the
	// usage arrives in the stream's last chunk.
	Stream bool
	// FileInput says the member takes chat "file" parts (openai): a PDF
	// document is sent as one; without it, it is dropped.
	FileInput bool
}

// Error is a client request a translation cannot express: the member
// answers it at once, without an upstream call, with Status (400) and Code
// in the client's API envelope.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Stream turns one chat completion stream into the client's event stream,
// fed one chunk at a time. A Stream serves one stream and is not safe for
// concurrent use.
type Stream interface {
	// Chunk appends to dst the client's SSE events (each "event: …\ndata:
	// …\n\n") for one chat.completion.chunk, the JSON data of one SSE
	// event of the chat stream. It may append nothing.
	Chunk(dst, data []byte) ([]byte, error)
	// Done appends the closing events at the chat stream's clean end
	// (its data: [DONE]).
	Done(dst []byte) ([]byte, error)
	// Fail appends the client's error event for a failure after the
	// stream began (status, and the OpenAI error type, code and message).
	Fail(dst []byte, status int, typ, code, message string) []byte
	// Release gives the Stream back for a later stream to reuse, its
	// buffers with it; it must not be used again. A Stream never released
	// is simply collected.
	Release()
}

// maxPooledStreamBuf is the largest buffer a released Stream (or a pooled
// translation's scratch) keeps: one long answer must not pin its text in
// the pool for good.
const maxPooledStreamBuf = 64 << 10

// keepBuf returns b emptied for reuse, or nil when it is too large to keep.
func keepBuf(b []byte) []byte {
	if cap(b) > maxPooledStreamBuf {
		return nil
	}
	return b[:0]
}
