package config

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Cloud holds the target keys of the azure and vertex providers
// (docs/providers.md). Every field is "" unless set; the credentials are
// secrets.
type Cloud struct {
	// AzureAPIVersion selects classic deployment URLs
	// ({base_url}/openai/deployments/{model}/…?api-version=…) when set; ""
	// = the v1 API under base_url.
	AzureAPIVersion string `yaml:"azure_api_version"`
	// AzureDeploymentType declares where Azure may process a request:
	// standard, datazone or global. "" = not declared.
	AzureDeploymentType string `yaml:"azure_deployment_type"`
	// AzureTenantID, AzureClientID and AzureClientSecret are Entra ID client
	// credentials; all three or none. AzureClientSecret is a secret.
	AzureTenantID     string `yaml:"azure_tenant_id"`
	AzureClientID     string `yaml:"azure_client_id"`
	AzureClientSecret string `yaml:"azure_client_secret"`
	// AzureAuthority is the Entra ID authority. Default
	// https://login.microsoftonline.com when client credentials are set.
	AzureAuthority string `yaml:"azure_authority"`
	// Project is the Google Cloud project (vertex).
	Project string `yaml:"project"`
	// CredentialsFile is the path of a service-account key file (vertex);
	// its content is read at load into ServiceAccountKey.
	CredentialsFile string `yaml:"credentials_file"`
	// CredentialsJSON is a service-account key inline (vertex). Secret.
	CredentialsJSON string `yaml:"credentials_json"`
	// ServiceAccountKey is the service-account key JSON, from
	// credentials_json or credentials_file; nil for other providers. Secret.
	ServiceAccountKey []byte `yaml:"-"`
}

// Azure deployment types.
const (
	AzureStandard = "standard"
	AzureDataZone = "datazone"
	AzureGlobal   = "global"
)

// DefaultAzureAuthority is the Entra ID authority used when
// azure_authority is left out.
const DefaultAzureAuthority = "https://login.microsoftonline.com"

// VertexGlobal is the vertex region served by the global endpoint.
const VertexGlobal = "global"

var cloudKeys = []string{"azure_api_version", "azure_deployment_type", "azure_tenant_id", "azure_client_id",
	"azure_client_secret", "azure_authority", "project", "credentials_file", "credentials_json"}

// decodeCloud decodes the Cloud keys of the target at path from m.
func (d *decoder) decodeCloud(m map[string]ast.Node, path string, c *Cloud) {
	d.setStr(m, path, "azure_api_version", &c.AzureAPIVersion)
	d.setStr(m, path, "azure_deployment_type", &c.AzureDeploymentType)
	d.setStr(m, path, "azure_tenant_id", &c.AzureTenantID)
	d.setStr(m, path, "azure_client_id", &c.AzureClientID)
	d.setStr(m, path, "azure_client_secret", &c.AzureClientSecret)
	d.setStr(m, path, "azure_authority", &c.AzureAuthority)
	d.setStr(m, path, "project", &c.Project)
	d.setStr(m, path, "credentials_file", &c.CredentialsFile)
	d.setStr(m, path, "credentials_json", &c.CredentialsJSON)
}

// cloudBaseURL returns the default base URL of a vertex target: the
// regional endpoint, or the global one; "" when the region is unusable
// (reported at region).
func cloudBaseURL(t *Target) string {
	switch {
	case t.Provider != ProviderVertex:
		return ""
	case t.Region == VertexGlobal:
		return "https://aiplatform.googleapis.com"
	case validRegion(t.Region):
		return "https://" + t.Region + "-aiplatform.googleapis.com"
	}
	return ""
}

var (
	azureAPIVersion = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}(-preview)?$`)
	// azureTenant: a GUID or a domain name; it becomes a path segment.
	azureTenant = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*$`)
	// gcpProject: Google's project id shape (optionally domain-scoped).
	gcpProject = regexp.MustCompile(`^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
)

// validateAzure checks an azure target's keys.
func (d *decoder) validateAzure(t *Target, path string) {
	p := func(key string) string { return join(path, key) }
	c := &t.Cloud
	if c.AzureAPIVersion != "" && !azureAPIVersion.MatchString(c.AzureAPIVersion) {
		d.problemf(p("azure_api_version"), "%s is not an Azure OpenAI API version; want a date such as \"2024-10-21\" or \"2025-04-01-preview\"",
			quoteShort(c.AzureAPIVersion))
	}
	if c.AzureAPIVersion != "" && strings.HasSuffix(t.BaseURL, "/openai/v1") {
		d.problemf(p("base_url"), "with azure_api_version, base_url is the resource root; want https://{resource}.openai.azure.com without /openai/v1")
	}
	switch c.AzureDeploymentType {
	case "", AzureStandard, AzureDataZone, AzureGlobal:
	default:
		d.problemf(p("azure_deployment_type"), "%s is not an Azure deployment type; want standard, datazone or global", quoteShort(c.AzureDeploymentType))
	}
	entra := c.AzureTenantID != "" || c.AzureClientID != "" || c.AzureClientSecret != ""
	if entra {
		for _, k := range []struct{ key, v string }{{"azure_tenant_id", c.AzureTenantID}, {"azure_client_id", c.AzureClientID}, {"azure_client_secret", c.AzureClientSecret}} {
			if k.v == "" && !d.decodeBad[p(k.key)] {
				d.problemf(p(k.key), "%s is required with Entra ID client credentials; want azure_tenant_id, azure_client_id and azure_client_secret together", k.key)
			}
		}
		if t.APIKey != "" {
			d.problemf(p("api_key"), "both api_key and Entra ID client credentials are set; want one credential")
		}
		if c.AzureTenantID != "" && !azureTenant.MatchString(c.AzureTenantID) {
			d.problemf(p("azure_tenant_id"), "%s is not a tenant id; want a GUID or a domain such as contoso.onmicrosoft.com", quoteShort(c.AzureTenantID))
		}
	} else if c.AzureAuthority != "" {
		d.problemf(p("azure_authority"), "azure_authority is set without client credentials; want it only with azure_tenant_id, azure_client_id and azure_client_secret")
	}
	if c.AzureAuthority != "" {
		if msg := checkBaseURL(c.AzureAuthority); msg != "" {
			d.problemf(p("azure_authority"), "%s", strings.Replace(msg, "base_url", "azure_authority", 1))
		}
	}
	if t.BaseURL == "" && !d.decodeBad[p("base_url")] {
		d.problemf(p("base_url"), "azure needs base_url; want https://{resource}.openai.azure.com/openai/v1 (or the resource root with azure_api_version)")
	}
}

// validateVertex checks a vertex target's keys and reads its
// service-account key.
func (d *decoder) validateVertex(t *Target, path string) {
	p := func(key string) string { return join(path, key) }
	c := &t.Cloud
	switch {
	case c.Project == "":
		if !d.decodeBad[p("project")] {
			d.problemf(p("project"), "vertex needs project; want a Google Cloud project id such as my-project-123")
		}
	case !gcpProject.MatchString(c.Project):
		d.problemf(p("project"), "%s is not a Google Cloud project id; want lowercase letters, digits and hyphens, such as my-project-123", quoteShort(c.Project))
	}
	switch {
	case t.Region == "":
		if !d.decodeBad[p("region")] {
			d.problemf(p("region"), "vertex needs region; want a Google Cloud region such as europe-west4, or global")
		}
	case t.Region != VertexGlobal && !validRegion(t.Region):
		d.problemf(p("region"), "%s is not a Google Cloud region; want one such as europe-west4, or global", quoteShort(t.Region))
	}
	var key []byte
	keyPath := p("credentials_json")
	switch {
	case c.CredentialsFile != "" && c.CredentialsJSON != "":
		d.problemf(keyPath, "both credentials_file and credentials_json are set; want one")
		return
	case c.CredentialsJSON != "":
		key = []byte(c.CredentialsJSON)
	case c.CredentialsFile != "":
		keyPath = p("credentials_file")
		b, err := os.ReadFile(c.CredentialsFile)
		if err != nil {
			d.problemf(keyPath, "cannot read %s: %v; want a readable service-account key file", quoteShort(c.CredentialsFile), unwrapPath(err))
			return
		}
		key = b
	default:
		// No credential: requests go without Authorization, as a target
		// with an empty api_key does (a local mock, or a proxy that adds
		// its own).
		return
	}
	if msg := checkServiceAccountKey(key); msg != "" {
		d.problemf(keyPath, "%s", msg)
		return
	}
	c.ServiceAccountKey = key
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// checkServiceAccountKey returns "" for a service-account key with what
// the JWT-bearer grant needs, else what is wrong. It never quotes the key.
func checkServiceAccountKey(b []byte) string {
	var k struct {
		Type        string `json:"type"`
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
		TokenURI    string `json:"token_uri"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return "the service-account key is not JSON; want the key file Google Cloud issued (type service_account)"
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"client_email", k.ClientEmail}, {"private_key", k.PrivateKey}, {"token_uri", k.TokenURI}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	switch {
	case k.Type != "service_account":
		return fmt.Sprintf("the key's type is %s; want a service-account key (type service_account)", quoteShort(k.Type))
	case len(missing) > 0:
		return "the service-account key lacks " + strings.Join(missing, ", ") + "; want the key file Google Cloud issued"
	case checkBaseURL(k.TokenURI) != "":
		return "the service-account key's token_uri is not an http(s) URL"
	}
	return ""
}

// specific returns the value of the provider-specific key of t ("" when
// unset), for the check that a key belongs to the target's provider.
func (t *Target) specific(key string) string {
	switch key {
	case "api_key":
		return t.APIKey
	case "region":
		return t.Region
	case "aws_access_key_id":
		return t.AWSAccessKeyID
	case "aws_secret_access_key":
		return t.AWSSecretAccessKey
	case "aws_session_token":
		return t.AWSSessionToken
	case "anthropic_betas":
		return strings.Join(t.AnthropicBetas, ",")
	case "azure_api_version":
		return t.AzureAPIVersion
	case "azure_deployment_type":
		return t.AzureDeploymentType
	case "azure_tenant_id":
		return t.AzureTenantID
	case "azure_client_id":
		return t.AzureClientID
	case "azure_client_secret":
		return t.AzureClientSecret
	case "azure_authority":
		return t.AzureAuthority
	case "project":
		return t.Project
	case "credentials_file":
		return t.CredentialsFile
	case "credentials_json":
		return t.CredentialsJSON
	}
	return ""
}
