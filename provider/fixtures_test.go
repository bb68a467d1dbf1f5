package provider

// The request body these tests feed the adapters; the provider streams
// they feed them are package providertest's, shared with upstream's walk
// tests.

const chatBody = `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`
