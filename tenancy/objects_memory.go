package tenancy

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MemoryObjects is the in-process ObjectStore: at most max objects per key
// and kind, the oldest forgotten first. Each key's objects of a kind are
// indexed by id, kept in list order and queued by expiry, and every id has
// an entry across keys, so a lookup is O(1), a write or an expiry
// O(log n) plus a copy of the key's own list in the worst case, and a
// list page O(log n + page): no call scans another key's objects, and the
// one mutex is held for that long only. Safe for concurrent use.
type MemoryObjects struct {
	mu   sync.Mutex
	max  int
	now  func() time.Time
	keys map[string]*[NumKinds]*memTable
	// ids holds, per kind, the record of each id whichever key owns it
	// (the last recorded, should two keys ever record one id).
	ids [NumKinds]map[string]*memObject
	// held counts the records held, expired ones until they are pruned.
	held atomic.Int64
}

// memTable is one key's objects of one kind.
type memTable struct {
	byID map[string]*memObject
	// asc is the records in list order, oldest first (the reverse of a
	// newest-first list): new records mostly append at its end.
	asc []*memObject
	// exp is a min-heap of the records by expiry.
	exp expiryHeap
}

type memObject struct {
	Object
	expires time.Time
	at      int // index in its table's exp heap
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
	m := &MemoryObjects{max: max, now: now, keys: map[string]*[NumKinds]*memTable{}}
	for k := range m.ids {
		m.ids[k] = map[string]*memObject{}
	}
	return m
}

// Len returns the number of records held, expired ones included until
// they are pruned; one atomic load, so a caller may skip its lookups when
// it is 0.
func (m *MemoryObjects) Len() int { return int(m.held.Load()) }

// ascending orders records oldest first: the reverse of order.
func ascending(a, b *memObject) int { return order(&b.Object, &a.Object) }

// table returns key's objects of kind (created when create; nil when
// there are none), pruned of the expired ones. m.mu is held.
func (m *MemoryObjects) table(key string, kind Kind, create bool) *memTable {
	if kind >= NumKinds {
		return nil
	}
	ks := m.keys[key]
	if ks == nil {
		if !create {
			return nil
		}
		ks = &[NumKinds]*memTable{}
		m.keys[key] = ks
	}
	t := ks[kind]
	if t == nil {
		if !create {
			return nil
		}
		t = &memTable{byID: map[string]*memObject{}}
		ks[kind] = t
	}
	m.prune(t, m.now())
	return t
}

// prune drops t's records that expired by now: the heap's top ones only.
func (m *MemoryObjects) prune(t *memTable, now time.Time) {
	for len(t.exp) > 0 && !now.Before(t.exp[0].expires) {
		m.drop(t, t.exp[0])
	}
}

// drop forgets the record o of table t and its index entries.
func (m *MemoryObjects) drop(t *memTable, o *memObject) {
	delete(t.byID, o.ID)
	if i, ok := slices.BinarySearchFunc(t.asc, o, ascending); ok {
		if i == 0 {
			// The oldest (expiry, eviction): no copy.
			t.asc[0] = nil
			t.asc = t.asc[1:]
		} else {
			t.asc = slices.Delete(t.asc, i, i+1)
		}
	}
	heap.Remove(&t.exp, o.at)
	if m.ids[o.Kind][o.ID] == o {
		delete(m.ids[o.Kind], o.ID)
	}
	m.held.Add(-1)
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
	if old, exists := t.byID[o.ID]; exists {
		if keep {
			return false, nil
		}
		m.drop(t, old)
	} else if len(t.byID) >= m.max {
		m.drop(t, t.asc[0])
	}
	x := &memObject{Object: o, expires: now.Add(retention)}
	t.byID[o.ID] = x
	i, _ := slices.BinarySearchFunc(t.asc, x, ascending)
	t.asc = slices.Insert(t.asc, i, x)
	heap.Push(&t.exp, x)
	m.ids[o.Kind][o.ID] = x
	m.held.Add(1)
	return true, nil
}

// Get implements ObjectStore.
func (m *MemoryObjects) Get(_ context.Context, key string, kind Kind, id string) (Object, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.table(key, kind, false); t != nil {
		if o, ok := t.byID[id]; ok {
			c := o.Object
			c.Models = slices.Clone(c.Models)
			return c, true, nil
		}
	}
	return Object{}, false, nil
}

// Delete implements ObjectStore.
func (m *MemoryObjects) Delete(_ context.Context, key string, kind Kind, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.table(key, kind, false); t != nil {
		if o, ok := t.byID[id]; ok {
			m.drop(t, o)
		}
	}
	return nil
}

// Flag implements ObjectStore.
func (m *MemoryObjects) Flag(_ context.Context, key string, kind Kind, id string, f Flag) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table(key, kind, false)
	if t == nil {
		return false, nil
	}
	o, ok := t.byID[id]
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

// List implements ObjectStore: the cursors are found by id and binary
// search, and only the page is copied.
func (m *MemoryObjects) List(_ context.Context, key string, kind Kind, p Page) ([]Object, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table(key, kind, false)
	if t == nil {
		if p.After != "" || p.Before != "" {
			return nil, false, ErrCursor
		}
		return nil, false, nil
	}
	n := len(t.asc)
	// pos is the position in the page's order of the record id.
	pos := func(id string) (int, bool) {
		o, ok := t.byID[id]
		if id == "" || !ok {
			return -1, id == ""
		}
		i, _ := slices.BinarySearchFunc(t.asc, o, ascending)
		if !p.Ascending {
			i = n - 1 - i
		}
		return i, true
	}
	after, ok1 := pos(p.After)
	before, ok2 := pos(p.Before)
	if !ok1 || !ok2 {
		return nil, false, ErrCursor
	}
	start, end, more := pageBounds(n, after, before, p)
	out := make([]Object, 0, end-start)
	for j := start; j < end; j++ {
		i := j
		if !p.Ascending {
			i = n - 1 - j
		}
		c := t.asc[i].Object
		c.Models = slices.Clone(c.Models)
		out = append(out, c)
	}
	return out, more, nil
}

// Count implements ObjectStore.
func (m *MemoryObjects) Count(_ context.Context, key string) ([NumKinds]int, error) {
	var n [NumKinds]int
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := Kind(0); k < NumKinds; k++ {
		if t := m.table(key, k, false); t != nil {
			n[k] = len(t.byID)
		}
	}
	return n, nil
}

// Owners implements ObjectStore: one map lookup per id; an expired record
// found so is dropped.
func (m *MemoryObjects) Owners(_ context.Context, kind Kind, ids []string, owners []string) error {
	if kind >= NumKinds {
		return fmt.Errorf("tenancy: no kind %d", kind)
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, id := range ids {
		owners[i] = ""
		o := m.ids[kind][id]
		if o == nil {
			continue
		}
		if !now.Before(o.expires) {
			m.prune(m.keys[o.Key][kind], now)
			continue
		}
		owners[i] = o.Key
	}
	return nil
}

// expiryHeap is a min-heap of records by expiry (container/heap); each
// record knows its index, so any one is removed in O(log n).
type expiryHeap []*memObject

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].at, h[j].at = i, j
}
func (h *expiryHeap) Push(x any) {
	o := x.(*memObject)
	o.at = len(*h)
	*h = append(*h, o)
}
func (h *expiryHeap) Pop() any {
	old := *h
	o := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return o
}
