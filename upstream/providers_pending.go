package upstream

// adapterFactories maps a provider name to its adapter constructor. The
// openai adapter is built in (see adapterFor); the anthropic and bedrock
// adapters register themselves from their own files' init functions:
//
//	func init() { adapterFactories[config.ProviderAnthropic] = newAnthropicAdapter }
//
// Written only from init functions, read-only afterwards, so reads need no
// lock.
var adapterFactories = map[string]func() Adapter{}
