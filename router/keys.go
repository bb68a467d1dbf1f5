package router

import (
	"strconv"
	"strings"
)

// KeySpec is what routing needs to know of a client key (docs/client-keys.md): the
// identity it binds and the models it may use. The caller builds a
// Request for a key's client with Bind.
type KeySpec struct {
	// Name is the key's label.
	Name string
	// User is the bound user when HasUser; the body's user is then
	// ignored for routing.
	User    []byte
	HasUser bool
	// Metadata holds the bound metadata entries, each name once; they
	// replace the header's entries of the same name. nil = none.
	Metadata []Pair
	// Models is the allow-list (exact ids and "prefix*" patterns); nil
	// means any model.
	Models []string
	// Residency lists the labels of the targets the key's requests may
	// reach; nil = unrestricted (see CheckResidency).
	Residency []string
}

// ModelSet is a compiled list of exact model ids and "prefix*" patterns,
// such as a client key's allow-list. Safe for concurrent use.
type ModelSet struct{ ms modelSet }

// NewModelSet compiles models; nil admits any model, an empty list none.
func NewModelSet(models []string) ModelSet { return ModelSet{compileModelSet(models)} }

// Has reports whether model is an exact id of the set or starts with one of
// its patterns' prefixes. Allocation-free.
func (m *ModelSet) Has(model []byte) bool { return m.ms.has(model) }

// Bind makes r the request as key k's client sends it: a bound user
// replaces r's (a request then always has one), and bound metadata entries
// replace r's entries of the same name, the others kept after them. The
// merged entries are appended to buf[:0], which is returned for reuse; r
// then refers to it. Allocation-free once buf has room for
// len(k.Metadata)+len(r.Metadata) pairs.
func Bind(r *Request, k *KeySpec, buf []Pair) []Pair {
	if k.HasUser {
		r.User, r.HasUser = k.User, true
	}
	if len(k.Metadata) == 0 {
		return buf
	}
	buf = append(buf[:0], k.Metadata...)
	for _, p := range r.Metadata {
		if !boundEntry(k.Metadata, p.Key) {
			buf = append(buf, p)
		}
	}
	r.Metadata = buf
	return buf
}

func boundEntry(bound []Pair, name []byte) bool {
	for i := range bound {
		if string(bound[i].Key) == string(name) {
			return true
		}
	}
	return false
}

// ModelsFor returns the /v1/models list as key k's client sees it (docs/client-keys.md):
// the models a request carrying only that model, with k's bindings applied,
// routes on some surface to a chain member serving it, restricted to k's
// allow-list. The candidates are those of Models plus the exact ids of the
// allow-list. Sorted by ID, never nil.
func (s *Snapshot) ModelsFor(k *KeySpec) []ModelInfo {
	var base Request
	Bind(&base, k, nil)
	allow := compileModelSet(k.Models)
	var extra []string
	for _, m := range k.Models {
		if !isPattern(m) {
			extra = append(extra, m)
		}
	}
	return s.modelsFor(&base, &allow, extra)
}

// IdentityKey returns a text two keys share when requests carrying only a
// model route alike for both: their allow-lists are the same, and so are
// the bound user and metadata entries that some rule could match (a bound
// user no user rule names routes like no user). Callers use it to compute
// ModelsFor once per distinct identity.
func (s *Snapshot) IdentityKey(k *KeySpec) string {
	var b strings.Builder
	if _, ok := s.users[string(k.User)]; k.HasUser && ok {
		b.WriteString(strconv.Quote(string(k.User)))
	}
	b.WriteByte('|')
	for _, p := range k.Metadata {
		if _, ok := s.meta[string(p.Key)][string(p.Value)]; ok {
			b.WriteString(strconv.Quote(string(p.Key)) + "=" + strconv.Quote(string(p.Value)) + ",")
		}
	}
	b.WriteByte('|')
	if k.Models == nil {
		b.WriteString("*")
	}
	for _, m := range k.Models {
		b.WriteString(strconv.Quote(m) + ",")
	}
	return b.String()
}
