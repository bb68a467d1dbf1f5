// Package hotpath is the gateway's fasthttp handler: peek, route, walk,
// write. Read handler.go top to bottom and you know what a request does:
//
//  1. Load the current State once (state.go); the whole request runs on it,
//     whatever reloads happen meanwhile. Echo or generate X-Request-Id.
//     With client keys (auth.go), find the key from the header section
//     before the body is read: 400 repeated, 401 missing or unknown.
//  2. Peek (peek.go): read model, user, stream and tools from the body
//     without decoding the rest; a bad body is a 400. A model outside the
//     key's allow-list is a 403.
//  3. Parse X-Gateway-Metadata (chat and completions only) with the
//     router's parser; a bad header is a 400. The key's bound user and
//     metadata replace the client's claims (router.Bind).
//  4. Route: the router's first matching rule names a chain (or the
//     fallback [targets[0]]); the candidates are its members that serve the
//     model and the surface. None: 404 model_not_found or
//     unsupported_endpoint. X-Gateway-Rule names the rule from here on.
//  5. Walk: upstream.Walk tries the candidates in order and writes the
//     answer. Nothing here talks to a provider or holds mutable routing
//     state.
//
// server.go builds the fasthttp.Server around the handler; finish.go
// reports each finished request to Gateway.Finished.
package hotpath
