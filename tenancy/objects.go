package tenancy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

// MemoryObjects is the in-process ObjectStore: at most max objects per key,
// the oldest forgotten first. Safe for concurrent use.
type MemoryObjects struct {
	mu   sync.Mutex
	max  int
	now  func() time.Time
	keys map[string]*[NumKinds]map[string]*memObject
}

type memObject struct {
	Object
	expires time.Time
}

// DefaultObjectsPerKey bounds a MemoryObjects store made with max <= 0.
const DefaultObjectsPerKey = 100_000

// NewMemoryObjects returns a memory store keeping at most max objects per
// key and kind (max <= 0: DefaultObjectsPerKey). now is the clock; nil =
// time.Now.
func NewMemoryObjects(max int, now func() time.Time) *MemoryObjects {
	if max <= 0 {
		max = DefaultObjectsPerKey
	}
	if now == nil {
		now = time.Now
	}
	return &MemoryObjects{max: max, now: now, keys: map[string]*[NumKinds]map[string]*memObject{}}
}

// table returns key's objects of kind (created when create), pruned of
// expired ones.
func (m *MemoryObjects) table(key string, kind Kind, create bool) map[string]*memObject {
	if kind >= NumKinds {
		return nil
	}
	ks := m.keys[key]
	if ks == nil {
		if !create {
			return nil
		}
		ks = &[NumKinds]map[string]*memObject{}
		m.keys[key] = ks
	}
	t := ks[kind]
	if t == nil {
		if !create {
			return nil
		}
		t = map[string]*memObject{}
		ks[kind] = t
	}
	now := m.now()
	for id, o := range t {
		if !now.Before(o.expires) {
			delete(t, id)
		}
	}
	return t
}

// Put implements ObjectStore.
func (m *MemoryObjects) Put(ctx context.Context, o Object, retention time.Duration) error {
	_, err := m.put(o, retention, false)
	return err
}

// PutNew implements ObjectStore.
func (m *MemoryObjects) PutNew(ctx context.Context, o Object, retention time.Duration) (bool, error) {
	return m.put(o, retention, true)
}

func (m *MemoryObjects) put(o Object, retention time.Duration, keep bool) (bool, error) {
	if o.Kind >= NumKinds || o.ID == "" {
		return false, fmt.Errorf("tenancy: cannot record an object of kind %d with id %q", o.Kind, o.ID)
	}
	now := m.now()
	if o.Seq == 0 {
		o.Seq = now.UnixMicro()
	}
	o.Models = slices.Clone(o.Models[:min(len(o.Models), MaxModels)])
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table(o.Key, o.Kind, true)
	_, exists := t[o.ID]
	if exists && keep {
		return false, nil
	}
	if !exists && len(t) >= m.max {
		var oldest *memObject
		for _, x := range t {
			if oldest == nil || order(&x.Object, &oldest.Object) > 0 {
				oldest = x
			}
		}
		delete(t, oldest.ID)
	}
	t[o.ID] = &memObject{Object: o, expires: now.Add(retention)}
	return true, nil
}

// Get implements ObjectStore.
func (m *MemoryObjects) Get(_ context.Context, key string, kind Kind, id string) (Object, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.table(key, kind, false)[id]; ok {
		c := o.Object
		c.Models = slices.Clone(c.Models)
		return c, true, nil
	}
	return Object{}, false, nil
}

// Delete implements ObjectStore.
func (m *MemoryObjects) Delete(_ context.Context, key string, kind Kind, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.table(key, kind, false), id)
	return nil
}

// Flag implements ObjectStore.
func (m *MemoryObjects) Flag(_ context.Context, key string, kind Kind, id string, f Flag) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.table(key, kind, false)[id]
	if !ok {
		return false, nil
	}
	p := &o.Released
	if f == FlagCharged {
		p = &o.Charged
	}
	if *p {
		return false, nil
	}
	*p = true
	return true, nil
}

// List implements ObjectStore.
func (m *MemoryObjects) List(_ context.Context, key string, kind Kind, p Page) ([]Object, bool, error) {
	m.mu.Lock()
	t := m.table(key, kind, false)
	all := make([]Object, 0, len(t))
	for _, o := range t {
		c := o.Object
		c.Models = slices.Clone(c.Models)
		all = append(all, c)
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b Object) int { return order(&a, &b) })
	if p.Ascending {
		slices.Reverse(all)
	}
	return pageOf(all, p)
}

// pageOf cuts the page p out of all, sorted in the page's order.
func pageOf(all []Object, p Page) ([]Object, bool, error) {
	start, end := 0, len(all)
	if p.After != "" {
		i := slices.IndexFunc(all, func(o Object) bool { return o.ID == p.After })
		if i < 0 {
			return nil, false, ErrCursor
		}
		start = i + 1
	}
	if p.Before != "" {
		i := slices.IndexFunc(all, func(o Object) bool { return o.ID == p.Before })
		if i < 0 {
			return nil, false, ErrCursor
		}
		end = i
		// Before: the page that ends right before the cursor.
		if p.Limit > 0 && end-start > p.Limit {
			start = end - p.Limit
			return all[start:end], start > 0, nil
		}
		return all[start:end], false, nil
	}
	if p.Limit > 0 && end-start > p.Limit {
		return all[start : start+p.Limit], true, nil
	}
	return all[start:end], false, nil
}

// Count implements ObjectStore.
func (m *MemoryObjects) Count(_ context.Context, key string) ([NumKinds]int, error) {
	var n [NumKinds]int
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := Kind(0); k < NumKinds; k++ {
		n[k] = len(m.table(key, k, false))
	}
	return n, nil
}
