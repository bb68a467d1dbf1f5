package tenancy

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Stored batches (docs/batches.md): every file and batch id the gateway
// hands out is recorded with the client key that owns it and the target
// that holds it. The records of one key live in that key's own namespace:
// an id is looked up there and nowhere else, so another key's id is as
// unknown as an id never handed out, and no request can name its way into
// a namespace that is not its key's.

// Kind is the kind of a recorded object; ids of different kinds are
// separate namespaces.
type Kind uint8

// Kinds.
const (
	KindFile         Kind = iota // an OpenAI-shaped file (input, output or error)
	KindBatch                    // an OpenAI-shaped batch
	KindMessageBatch             // an Anthropic message batch
	NumKinds
)

var kindNames = [NumKinds]string{"file", "batch", "message_batch"}

// String is the kind's name in metrics and store keys.
func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return "unknown"
}

// Object is what the gateway records of one file or batch it handed out.
type Object struct {
	Kind Kind
	ID   string
	// Key is the owner client key's name ("" without an auth block);
	// Target the virtual_key of the target holding the object.
	Key, Target string
	// Created is the provider's created_at (Unix seconds); Seq the
	// gateway's record time (Unix µs), set by Put when 0. Lists order by
	// both, newest first.
	Created, Seq int64
	// Purpose is a file's purpose ("batch", "batch_output"); "" otherwise.
	Purpose string
	// Surface is the surface of the requests a file or batch holds
	// ("chat", "embeddings", ..., "messages").
	Surface string
	// Models are the models the requests name (at most MaxModels).
	Models []string
	// Tokens is a file's estimate (the sum of its lines'), or what a
	// batch reserved against tokens_per_day; Day and Month are the
	// reservation's budget windows.
	Tokens     int64
	Day, Month int64
	// Input is a batch's input file id.
	Input string
	// Released and Charged say a batch's reservation was given back and
	// its usage charged (each once; see Flag).
	Released, Charged bool
}

// MaxModels bounds Object.Models: a file naming more models keeps the
// first ones.
const MaxModels = 16

// Flag is a once-only mark on an object.
type Flag uint8

// Flags.
const (
	FlagReleased Flag = iota // the reservation was given back
	FlagCharged              // the usage was charged
)

// Page asks a List for one page: at most Limit objects, newest first
// (Ascending: oldest first), after the object After or before the object
// Before (ids of the same key and kind; "" = none).
type Page struct {
	Limit         int
	After, Before string
	Ascending     bool
}

// ErrCursor is List's error for a cursor the key does not own.
var ErrCursor = errors.New("tenancy: the cursor is not an object of this key")

// ObjectStore records the owners of files and batches. Implementations are
// safe for concurrent use; every call is bounded by ctx.
type ObjectStore interface {
	// Put records o for retention (replacing a record of the same key,
	// kind and id), in one atomic step: either the whole record is there
	// or none of it.
	Put(ctx context.Context, o Object, retention time.Duration) error
	// PutNew records o like Put unless key already has an object of its
	// kind and id (whose record is then kept as it is); added reports
	// whether it recorded o.
	PutNew(ctx context.Context, o Object, retention time.Duration) (added bool, err error)
	// Get returns key's object of kind with id; ok is false when key has
	// none (never handed out to key, expired or deleted).
	Get(ctx context.Context, key string, kind Kind, id string) (o Object, ok bool, err error)
	// Delete forgets key's object of kind with id.
	Delete(ctx context.Context, key string, kind Kind, id string) error
	// Flag sets flag on key's object of kind with id and reports whether
	// this call set it (false: it was set already, or there is no such
	// object): the caller that gets true does the once-only work.
	Flag(ctx context.Context, key string, kind Kind, id string, flag Flag) (first bool, err error)
	// List returns a page of key's objects of kind, and whether more
	// follow in the page's direction. A cursor key does not own is
	// ErrCursor.
	List(ctx context.Context, key string, kind Kind, p Page) (objs []Object, more bool, err error)
	// Count returns how many objects of each kind key owns.
	Count(ctx context.Context, key string) ([NumKinds]int, error)
	// Owners sets owners[i] to the key that owns the object of kind with
	// id ids[i], whichever key that is, or "" when no key does: the view
	// across namespaces that refuses one key's id named in another key's
	// request body (docs/residency.md). len(owners) must be len(ids).
	Owners(ctx context.Context, kind Kind, ids []string, owners []string) error
}

// order reports whether a comes before b in a newest-first list: later
// created_at first, then later record time, then the greater id.
func order(a, b *Object) int {
	switch {
	case a.Created != b.Created:
		return cmpDesc(a.Created, b.Created)
	case a.Seq != b.Seq:
		return cmpDesc(a.Seq, b.Seq)
	}
	return -strings.Compare(a.ID, b.ID)
}

func cmpDesc(a, b int64) int {
	if a > b {
		return -1
	}
	return 1
}

// pageBounds cuts the page p out of a list of n objects in the page's
// order, where after and before are the positions of p's cursors (-1:
// none): the page is [start, end), more says whether others follow in the
// page's direction.
func pageBounds(n, after, before int, p Page) (start, end int, more bool) {
	start, end = 0, n
	if after >= 0 {
		start = after + 1
	}
	if before >= 0 {
		end = before
		// Before: the page that ends right before the cursor.
		if p.Limit > 0 && end-start > p.Limit {
			start = end - p.Limit
			return start, end, start > 0
		}
		return start, max(start, end), false
	}
	if p.Limit > 0 && end-start > p.Limit {
		return start, start + p.Limit, true
	}
	return start, end, false
}
