// Package hotpath is the gateway's fasthttp handler: peek, route, walk,
// write. Read handler.go top to bottom and you know what a request does:
//
//  1. Load the current State once (state.go); the whole request runs on it,
//     whatever reloads happen meanwhile. Echo or generate X-Request-Id.
//     Walk the header section once (head.go): what the screen, the client
//     key check, the metadata and the trace context need is recorded.
//     Screen the head (screen.go): doubtful body framing is a 400 with the
//     connection closed; a foreign Host on a loopback connection or an
//     Origin not allowed is a 403. Match the route on the raw path.
//  2. Peek (peek.go): read model, user (metadata.user_id on messages),
//     stream and tools from the body without decoding the rest; a bad body,
//     or trailer fields, is a 400.
//  3. Parse X-Gateway-Metadata (chat-like surfaces only), read once from
//     the header section as received (the one pass), with the router's
//     parser; a bad or repeated header is a 400. Errors on the messages
//     surface are in Anthropic's envelope (errors.go).
//  4. Route: the router's first matching rule names a chain (or the
//     fallback [targets[0]]); the candidates are its members that serve the
//     model and the surface. None: 404 model_not_found or
//     unsupported_endpoint. X-Gateway-Rule names the rule from here on.
//  5. Walk: upstream.Walk tries the candidates in order and writes the
//     answer. Nothing here talks to a provider or holds mutable routing
//     state.
//
// The batch APIs' paths (/v1/files, /v1/batches, /v1/messages/batches)
// are handed, once the client key is checked, to Gateway.Batches (package
// batch; batchgate.go holds what it borrows from here: the LineRouter that
// routes a request inside an upload as step 2-4 route one).
//
// server.go builds the fasthttp.Server around the handler; finish.go
// reports each finished request to Gateway.Finished.
package hotpath
