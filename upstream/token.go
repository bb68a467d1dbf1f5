package upstream

import (
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/provider"
)

// newTokenSource returns the token source of ct's credentials, started,
// or nil when ct has none (an API key or no credential).
func newTokenSource(ct *config.Target, static []secret) *TokenSource {
	return provider.NewTokenSource(provider.Credentials{
		Provider:          ct.Provider,
		AzureClientID:     ct.AzureClientID,
		AzureClientSecret: ct.AzureClientSecret,
		AzureAuthority:    ct.AzureAuthority,
		AzureTenantID:     ct.AzureTenantID,
		ServiceAccountKey: ct.ServiceAccountKey,
	}, static)
}
