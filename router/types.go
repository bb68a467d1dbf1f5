// Package router compiles routing rules into an immutable Snapshot and
// matches requests against it (docs/routing.md). It is pure: no I/O, no clock, no
// logging, and it imports nothing else of the gateway's. Callers translate
// their configuration into RuleSpec and TargetSpec values.
package router

import "strconv"

// Surface is an API surface of the gateway (docs/api.md, HTTP surface and headers).
type Surface uint8

// Surfaces.
const (
	SurfaceChat Surface = iota
	SurfaceCompletions
	SurfaceEmbeddings
	SurfaceImages
	// SurfaceResponses is OpenAI's Responses API (POST /v1/responses).
	SurfaceResponses
	// SurfaceMessages is Anthropic's Messages API (POST /v1/messages and
	// /v1/messages/count_tokens).
	SurfaceMessages
	NumSurfaces
)

var surfaceNames = [NumSurfaces]string{"chat", "completions", "embeddings", "images", "responses", "messages"}

// ChatLike reports whether s has streaming answers and routes on stream,
// has_tools and metadata (docs/routing.md, 3): every surface but embeddings and
// images.
func (s Surface) ChatLike() bool {
	return s == SurfaceChat || s == SurfaceCompletions || s == SurfaceResponses || s == SurfaceMessages
}

// String returns the surface's name as used in explain, logs and metrics.
func (s Surface) String() string {
	if s < NumSurfaces {
		return surfaceNames[s]
	}
	return "unknown"
}

// ParseSurface parses a surface name; ok is false for an unknown name.
func ParseSurface(name string) (s Surface, ok bool) {
	for i, n := range surfaceNames {
		if n == name {
			return Surface(i), true
		}
	}
	return 0, false
}

// SurfaceSet is a bit set of surfaces (bit i = Surface(i)).
type SurfaceSet uint8

// AllSurfaces contains every surface.
const AllSurfaces SurfaceSet = 1<<NumSurfaces - 1

// Has reports whether s contains surface x.
func (s SurfaceSet) Has(x Surface) bool { return s&(1<<x) != 0 }

// Key is a condition key (docs/configuration.md, Configuration reference).
type Key uint8

// Condition keys.
const (
	KeyModel Key = iota
	KeyModelPrefix
	KeyUser
	KeyStream
	KeyHasTools
	KeyMetadata
)

// String returns the key's configuration name (model, model_prefix, ...).
func (k Key) String() string {
	switch k {
	case KeyModel:
		return "model"
	case KeyModelPrefix:
		return "model_prefix"
	case KeyUser:
		return "user"
	case KeyStream:
		return "stream"
	case KeyHasTools:
		return "has_tools"
	case KeyMetadata:
		return "metadata"
	}
	return "Key(" + strconv.Itoa(int(k)) + ")"
}

// RuleSpec is one validated condition, ready to compile.
type RuleSpec struct {
	Key Key
	// Field is the metadata entry name (KeyMetadata only).
	Field string
	// Value is compared as written; "true"/"false" for stream and has_tools.
	Value string
	// Chain holds indexes into the targets slice, in walk order; non-empty,
	// no repeats.
	Chain []int
}

// TargetSpec is what the router needs to know about a target.
type TargetSpec struct {
	// Name is the target's virtual_key.
	Name string
	// Provider is the provider name; reported as owned_by in /v1/models.
	Provider string
	// Surfaces is the set of surfaces the provider serves.
	Surfaces SurfaceSet
	// Batch is the set of surfaces whose requests the target takes inside
	// a stored batch (docs/batches.md): a subset of Surfaces, so a batch
	// reaches no target a request of the same surface could not. 0 = none.
	Batch SurfaceSet
	// Models holds exact ids and "prefix*" patterns; nil means any model.
	Models []string
	// MappedModels holds the keys of the target's model_map: exact ids the
	// operator named for it. Like the exact ids of Models they are
	// /v1/models candidates; they do not change what the target serves.
	// nil means none.
	MappedModels []string
	// Residency is the target's residency label; "" = none (docs/residency.md).
	Residency string
}

// Pair is one X-Gateway-Metadata entry, value as written (strings unquoted,
// numbers as their literal text, booleans "true"/"false").
type Pair struct {
	Key, Value []byte
}

// Request is what routing reads of a request. The byte slices are borrowed
// from the caller for the duration of a call and are never retained.
type Request struct {
	Surface Surface
	Model   []byte
	// User is the request's user; HasUser is false when the body has none.
	User     []byte
	HasUser  bool
	Stream   bool
	HasTools bool
	// Metadata is the parsed X-Gateway-Metadata header (chat-like surfaces
	// only; ignored on embeddings and images).
	Metadata []Pair
}

// ModelInfo is one entry of the /v1/models list.
type ModelInfo struct {
	ID      string
	OwnedBy string
}
