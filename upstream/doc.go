// Package upstream owns talking to providers in the way every provider
// shares: one fasthttp.HostClient per target, the connection pool and
// dialing, the chain walk, retry, circuit breaker, 429 park, concurrency
// queue, the residency fence and the client-cancel watch. What differs
// from one provider to the next (request building, response and stream
// translation, usage readers, error envelopes, OAuth token sources) is
// package provider's; this package imports it and re-exports the names its
// callers use (provider.go). It never imports hotpath.
package upstream
