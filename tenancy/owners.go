// Package tenancy keeps provider-stored state with the tenant that created
// it (docs/residency.md): the id of each Responses API answer is
// remembered for the client key that created it, and a request naming a
// previous_response_id its key did not create is refused before any
// upstream call. The store is an interface: an in-process one (the
// default) and a Redis one shared by replicas.
package tenancy

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// TTL is how long a response id stays owned: OpenAI keeps stored
// responses for 30 days.
const TTL = 30 * 24 * time.Hour

// OwnerStore remembers which client key created each response id.
// Implementations are safe for concurrent use.
type OwnerStore interface {
	// Remember records that key created response id, for ttl.
	Remember(ctx context.Context, id, key string, ttl time.Duration) error
	// Owner returns the key that created id; "" when none did (unknown
	// or expired).
	Owner(ctx context.Context, id string) (string, error)
	// RememberAll records that key created each of ids (a response's
	// output items), for ttl.
	RememberAll(ctx context.Context, ids []string, key string, ttl time.Duration) error
	// Owners sets owners[i] to Owner of ids[i]. len(owners) must be
	// len(ids).
	Owners(ctx context.Context, ids []string, owners []string) error
}

// Memory is the in-process OwnerStore: at most Max ids, the oldest
// forgotten first. Safe for concurrent use.
type Memory struct {
	mu    sync.Mutex
	max   int
	now   func() time.Time
	owner map[string]memEntry
	order []string // ids in insertion order, a ring of max slots
	next  int
	held  atomic.Int64 // len(owner), for Len
}

type memEntry struct {
	key     string
	expires time.Time
}

// DefaultMemoryMax bounds a Memory store made with max <= 0.
const DefaultMemoryMax = 200_000

// NewMemory returns a Memory store holding at most max ids (max <= 0:
// DefaultMemoryMax). now is the clock; nil = time.Now.
func NewMemory(max int, now func() time.Time) *Memory {
	if max <= 0 {
		max = DefaultMemoryMax
	}
	if now == nil {
		now = time.Now
	}
	return &Memory{max: max, now: now, owner: make(map[string]memEntry), order: make([]string, 0, min(max, 1024))}
}

// Remember implements OwnerStore.
func (m *Memory) Remember(_ context.Context, id, key string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.remember(id, key, m.now().Add(ttl))
	return nil
}

// RememberAll implements OwnerStore.
func (m *Memory) RememberAll(_ context.Context, ids []string, key string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	expires := m.now().Add(ttl)
	for _, id := range ids {
		m.remember(id, key, expires)
	}
	return nil
}

// remember records id for key until expires (m.mu held).
func (m *Memory) remember(id, key string, expires time.Time) {
	if _, ok := m.owner[id]; !ok {
		if len(m.order) < m.max {
			m.order = append(m.order, id)
		} else {
			old := m.order[m.next]
			delete(m.owner, old)
			m.order[m.next] = id
			m.next = (m.next + 1) % m.max
		}
	}
	m.owner[id] = memEntry{key: key, expires: expires}
	m.held.Store(int64(len(m.owner)))
}

// Owner implements OwnerStore.
func (m *Memory) Owner(_ context.Context, id string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.owner[id]
	if !ok || !m.now().Before(e.expires) {
		return "", nil
	}
	return e.key, nil
}

// Owners implements OwnerStore.
func (m *Memory) Owners(_ context.Context, ids []string, owners []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for i, id := range ids {
		owners[i] = ""
		if e, ok := m.owner[id]; ok && now.Before(e.expires) {
			owners[i] = e.key
		}
	}
	return nil
}

// Len returns the number of ids held (expired ones included until
// evicted): one atomic load, so a caller may skip its lookups when it is 0.
func (m *Memory) Len() int { return int(m.held.Load()) }

// Redis is the OwnerStore shared by replicas: one key per response id,
// prefix + "resp:" + id, holding the client key's name and expiring with
// the ownership. Safe for concurrent use.
type Redis struct {
	c      rueidis.Client
	prefix string
}

// NewRedis returns a Redis store on client c; every key it writes starts
// with prefix (quotas.redis.key_prefix).
func NewRedis(c rueidis.Client, prefix string) *Redis { return &Redis{c: c, prefix: prefix} }

func (r *Redis) key(id string) string { return r.prefix + "resp:" + id }

// Remember implements OwnerStore: one SET with EX.
func (r *Redis) Remember(ctx context.Context, id, key string, ttl time.Duration) error {
	return r.c.Do(ctx, r.c.B().Set().Key(r.key(id)).Value(key).ExSeconds(int64(ttl/time.Second)).Build()).Error()
}

// RememberAll implements OwnerStore: one SET with EX per id, in one
// pipeline.
func (r *Redis) RememberAll(ctx context.Context, ids []string, key string, ttl time.Duration) error {
	if len(ids) == 0 {
		return nil
	}
	cmds := make(rueidis.Commands, len(ids))
	for i, id := range ids {
		cmds[i] = r.c.B().Set().Key(r.key(id)).Value(key).ExSeconds(int64(ttl / time.Second)).Build()
	}
	for _, res := range r.c.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

// Owners implements OwnerStore: one GET per id, in one pipeline.
func (r *Redis) Owners(ctx context.Context, ids []string, owners []string) error {
	if len(ids) == 0 {
		return nil
	}
	cmds := make(rueidis.Commands, len(ids))
	for i, id := range ids {
		cmds[i] = r.c.B().Get().Key(r.key(id)).Build()
	}
	for i, res := range r.c.DoMulti(ctx, cmds...) {
		s, err := res.ToString()
		switch {
		case rueidis.IsRedisNil(err):
			owners[i] = ""
		case err != nil:
			return err
		default:
			owners[i] = s
		}
	}
	return nil
}

// Owner implements OwnerStore: one GET.
func (r *Redis) Owner(ctx context.Context, id string) (string, error) {
	s, err := r.c.Do(ctx, r.c.B().Get().Key(r.key(id)).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", nil
	}
	return s, err
}
