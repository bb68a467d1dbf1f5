package config

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/switchyard/switchyard/router"
)

// Auth is the client keys block (docs/client-keys.md). Without it (no keys) the gateway
// is open to whoever reaches its listener.
type Auth struct {
	// Keys are the client keys, in declared order; non-empty after a
	// successful load of a file with an auth block, nil without one.
	Keys []ClientKey `yaml:"keys"`
}

// Enabled reports whether requests must present a client key.
func (a *Auth) Enabled() bool { return len(a.Keys) > 0 }

// MaxKeyMetadata is the most metadata entries a key may bind: the most an
// X-Gateway-Metadata header may carry (docs/routing.md, 2).
const MaxKeyMetadata = 32

// maxKeyName bounds a key's name, a label in every access line and metric.
const maxKeyName = 128

// ClientKey is one client key: its name, its digest and what it binds.
// The key itself is never kept: a `key:` value is hashed at load.
type ClientKey struct {
	// Name is the unique, non-empty label of the key in logs and metrics.
	Name string `yaml:"name"`
	// Digest is the SHA-256 of the key: decoded from sha256, or computed
	// from key at load.
	Digest [32]byte `yaml:"-"`
	// User, when not "", is the user routing sees for this key's requests,
	// whatever the body says. "" = unbound.
	User string `yaml:"user"`
	// Metadata entries replace the X-Gateway-Metadata entries of the same
	// name for this key's requests. nil = none bound.
	Metadata map[string]string `yaml:"metadata"`
	// Models is the allow-list: exact ids and "prefix*" patterns. nil = any
	// model; never empty but non-nil after a successful load.
	Models []string `yaml:"models"`
	// Limits are the key's rate limits and budgets; zero = none.
	Limits Limits `yaml:"limits"`
	// Residency lists the labels of the targets this key's requests may
	// reach, proven at load (docs/residency.md). nil = any target.
	Residency []string `yaml:"residency"`

	// Line is the 1-based line of the key in the file (0 if unknown).
	Line int `yaml:"-"`
}

var (
	authKeys      = []string{"keys"}
	clientKeyKeys = []string{"name", "sha256", "key", "user", "metadata", "models", "limits", "residency"}
)

// decodeAuth is phase 1 for the auth block. A `key:` value is hashed here
// and dropped, so no Config holds a client key in clear.
func (d *decoder) decodeAuth(n ast.Node, cfg *Config) {
	m := d.fields(n, "auth", "auth", authKeys...)
	items, ok := d.list(m["keys"], "auth.keys", "a list of client keys")
	if !ok {
		return
	}
	cfg.Auth.Keys = make([]ClientKey, len(items))
	for i, it := range items {
		path := index("auth.keys", i)
		k := &cfg.Auth.Keys[i]
		k.Line = d.pos[path].line
		f := d.fields(it, path, "a client key", clientKeyKeys...)
		d.setStr(f, path, "name", &k.Name)
		d.setStr(f, path, "user", &k.User)
		d.setStrList(f, path, "models", "model ids or prefix* patterns", &k.Models)
		d.decodeKeyMetadata(f["metadata"], join(path, "metadata"), k)
		d.decodeLimits(f["limits"], join(path, "limits"), &k.Limits)
		d.setStrList(f, path, "residency", "residency labels", &k.Residency)
		var digest, plain string
		hasDigest := d.has[join(path, "sha256")]
		hasPlain := d.has[join(path, "key")]
		d.setStr(f, path, "sha256", &digest)
		d.setStr(f, path, "key", &plain)
		switch {
		case hasDigest && hasPlain:
			d.problemf(join(path, "key"), "both sha256 and key are set; want exactly one (sha256 keeps the key out of the file)")
		case !hasDigest && !hasPlain:
			d.problemf(join(path, "sha256"), "no key; want sha256: <64 hex digits of the key's SHA-256> (see switchyard keys new) or key: ${ENV_VAR}")
		case hasDigest:
			if b, err := hex.DecodeString(digest); err == nil && len(b) == 32 {
				copy(k.Digest[:], b)
			} else if !d.decodeBad[join(path, "sha256")] {
				d.problemf(join(path, "sha256"), "sha256 is not 64 hex digits (got %d characters); want the hex SHA-256 of the key, as switchyard keys hash prints", len(digest))
			}
		case d.decodeBad[join(path, "key")]:
		case plain == "":
			d.problemf(join(path, "key"), "key is empty; want the client key (usually ${ENV_VAR}) or sha256")
		case strings.TrimSpace(plain) != plain || strings.ContainsFunc(plain, func(r rune) bool { return r < 0x21 || r == 0x7f }):
			// Header values lose surrounding spaces and cannot hold
			// control characters: such a key could never be presented.
			d.problemf(join(path, "key"), "key has spaces or control characters; want a key a client can send in a header (see switchyard keys new)")
		default:
			k.Digest = sha256.Sum256([]byte(plain))
		}
	}
}

// decodeKeyMetadata decodes a key's metadata binding: a mapping of entry
// names to scalars, kept as written like a condition's value (numbers keep
// their text, booleans become "true"/"false").
func (d *decoder) decodeKeyMetadata(n ast.Node, path string, k *ClientKey) {
	r := d.value(n, path)
	if r == nil {
		return
	}
	switch r.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		d.addAt(nodePos(n), path, "got %s; want a mapping of X-Gateway-Metadata entries, such as {tier: gold}", describe(r))
		return
	}
	k.Metadata = map[string]string{}
	for _, e := range d.entries(r, path, 0, true) {
		ep := path + "[" + strconv.Quote(e.key) + "]"
		d.pos[ep] = e.keyPos
		v, _ := d.resolve(e.val, ep)
		if b, ok := v.(*ast.BoolNode); ok {
			k.Metadata[e.key] = strconv.FormatBool(b.Value)
			continue
		}
		s, ok := d.str(e.val, ep, "a string, number or boolean")
		if !ok && !d.decodeBad[ep] {
			d.problemf(ep, "got null; want the entry's value as written")
		}
		k.Metadata[e.key] = s
	}
}

// validateAuth is phase 4 for the auth block.
func (d *decoder) validateAuth(cfg *Config) {
	if _, present := d.pos["auth"]; present && len(cfg.Auth.Keys) == 0 && !d.decodeBad["auth.keys"] {
		d.problemf("auth.keys", "no client keys; want at least one key under auth.keys, or no auth block to serve without keys")
	}
	names := map[string]int{}
	digests := map[[32]byte]int{}
	var zero [32]byte
	for i := range cfg.Auth.Keys {
		k := &cfg.Auth.Keys[i]
		path := index("auth.keys", i)
		p := func(key string) string { return join(path, key) }
		switch first, dup := names[k.Name]; {
		case k.Name == "":
			d.problemf(p("name"), "name is required; want a unique label for logs and metrics")
		case strings.ContainsFunc(k.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) || len(k.Name) > maxKeyName:
			d.problemf(p("name"), "name has control characters or is over %d bytes; want a short label for logs and metrics", maxKeyName)
		case dup:
			d.problemf(p("name"), "duplicate name %q (first at auth.keys[%d], line %d); want unique names", k.Name, first, cfg.Auth.Keys[first].Line)
		default:
			names[k.Name] = i
		}
		if k.Digest != zero {
			if first, dup := digests[k.Digest]; dup {
				at := p("sha256")
				if !d.has[at] {
					at = p("key")
				}
				d.problemf(at, "the same key as auth.keys[%d] (%s, line %d); want one key per client, so names and bindings are unambiguous",
					first, cfg.Auth.Keys[first].Name, cfg.Auth.Keys[first].Line)
			} else {
				digests[k.Digest] = i
			}
		}
		switch {
		case d.has[p("user")] && k.User == "" && !d.decodeBad[p("user")]:
			d.problemf(p("user"), "user is empty; want the user routing sees for this key, or no user to leave it unbound")
		case strings.TrimSpace(k.User) != k.User:
			d.problemf(p("user"), "%s has surrounding spaces; want the user without them", quoteShort(k.User))
		}
		if len(k.Metadata) > MaxKeyMetadata {
			d.problemf(p("metadata"), "%d entries; want at most %d, as in an X-Gateway-Metadata header", len(k.Metadata), MaxKeyMetadata)
		}
		for _, name := range slices.Sorted(maps.Keys(k.Metadata)) {
			if name == "" {
				d.problemf(p("metadata")+`[""]`, "metadata entry name is empty; want the X-Gateway-Metadata entry name")
			}
		}
		d.validateModelList(p("models"), k.Models,
			"models is empty, so the key could use no model; omit models to allow any model, or list model ids")
	}
}

// KeySpecs converts the client keys into the router's view of them, in
// declared order: name, bound user and metadata (sorted by entry name),
// allow-list. nil without an auth block.
func (c *Config) KeySpecs() []router.KeySpec {
	if len(c.Auth.Keys) == 0 {
		return nil
	}
	out := make([]router.KeySpec, len(c.Auth.Keys))
	for i := range c.Auth.Keys {
		k := &c.Auth.Keys[i]
		ks := router.KeySpec{Name: k.Name, User: []byte(k.User), HasUser: k.User != "", Models: slices.Clone(k.Models), Residency: slices.Clone(k.Residency)}
		for _, name := range slices.Sorted(maps.Keys(k.Metadata)) {
			ks.Metadata = append(ks.Metadata, router.Pair{Key: []byte(name), Value: []byte(k.Metadata[name])})
		}
		out[i] = ks
	}
	return out
}
