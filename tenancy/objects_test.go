package tenancy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/switchyard/switchyard/tenancy/tenancytest"
)

// objectStores returns a fresh store of each implementation, with a clock
// the test moves for the memory one (Redis expires on its own clock).
func testObjectStore(t *testing.T, s ObjectStore) {
	ctx := context.Background()
	put := func(o Object) {
		t.Helper()
		if err := s.Put(ctx, o, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	put(Object{Kind: KindFile, ID: "file-a", Key: "acme", Target: "oai", Created: 100, Seq: 1, Purpose: "batch",
		Surface: "chat", Models: []string{"gpt-4o", "gpt-4o-mini"}, Tokens: 42})
	put(Object{Kind: KindFile, ID: "file-b", Key: "acme", Target: "azure", Created: 200, Seq: 2})
	put(Object{Kind: KindFile, ID: "file-c", Key: "acme", Target: "oai", Created: 200, Seq: 3})
	put(Object{Kind: KindFile, ID: "file-g", Key: "globex", Target: "oai", Created: 300, Seq: 4})
	put(Object{Kind: KindBatch, ID: "file-a", Key: "acme", Target: "oai", Created: 1, Seq: 5, Tokens: 7, Day: 3, Month: 4, Input: "file-a"})

	o, ok, err := s.Get(ctx, "acme", KindFile, "file-a")
	want := Object{Kind: KindFile, ID: "file-a", Key: "acme", Target: "oai", Created: 100, Seq: 1, Purpose: "batch",
		Surface: "chat", Models: []string{"gpt-4o", "gpt-4o-mini"}, Tokens: 42}
	if err != nil || !ok || !reflect.DeepEqual(o, want) {
		t.Fatalf("Get = %+v, %v, %v; want %+v", o, ok, err, want)
	}
	// Namespaces: another key's id, and the same id of another kind.
	if _, ok, _ := s.Get(ctx, "globex", KindFile, "file-a"); ok {
		t.Fatal("globex sees acme's file")
	}
	if _, ok, _ := s.Get(ctx, "acme", KindFile, "file-g"); ok {
		t.Fatal("acme sees globex's file")
	}
	if b, ok, _ := s.Get(ctx, "acme", KindBatch, "file-a"); !ok || b.Input != "file-a" || b.Day != 3 || b.Month != 4 || b.Tokens != 7 {
		t.Fatalf("batch = %+v, %v", b, ok)
	}

	ids := func(objs []Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.ID)
		}
		return out
	}
	list := func(p Page) ([]string, bool) {
		t.Helper()
		objs, more, err := s.List(ctx, "acme", KindFile, p)
		if err != nil {
			t.Fatal(err)
		}
		return ids(objs), more
	}
	// Newest first: created_at, then record order.
	if got, more := list(Page{Limit: 10}); !reflect.DeepEqual(got, []string{"file-c", "file-b", "file-a"}) || more {
		t.Fatalf("list = %v, %v", got, more)
	}
	if got, more := list(Page{Limit: 2}); !reflect.DeepEqual(got, []string{"file-c", "file-b"}) || !more {
		t.Fatalf("page 1 = %v, %v", got, more)
	}
	if got, more := list(Page{Limit: 2, After: "file-b"}); !reflect.DeepEqual(got, []string{"file-a"}) || more {
		t.Fatalf("page 2 = %v, %v", got, more)
	}
	if got, more := list(Page{Limit: 1, Before: "file-a"}); !reflect.DeepEqual(got, []string{"file-b"}) || !more {
		t.Fatalf("before file-a = %v, %v", got, more)
	}
	if got, more := list(Page{Limit: 5, Before: "file-a"}); !reflect.DeepEqual(got, []string{"file-c", "file-b"}) || more {
		t.Fatalf("before file-a, 5 = %v, %v", got, more)
	}
	if got, _ := list(Page{Limit: 10, Ascending: true}); !reflect.DeepEqual(got, []string{"file-a", "file-b", "file-c"}) {
		t.Fatalf("ascending = %v", got)
	}
	// A cursor of another key is refused, not followed.
	if _, _, err := s.List(ctx, "acme", KindFile, Page{Limit: 2, After: "file-g"}); !errors.Is(err, ErrCursor) {
		t.Fatalf("foreign cursor: %v", err)
	}

	// Flags are once-only, and only on existing records.
	if first, err := s.Flag(ctx, "acme", KindBatch, "file-a", FlagCharged); !first || err != nil {
		t.Fatalf("first flag = %v, %v", first, err)
	}
	if first, _ := s.Flag(ctx, "acme", KindBatch, "file-a", FlagCharged); first {
		t.Fatal("second flag reported first")
	}
	if first, _ := s.Flag(ctx, "acme", KindBatch, "nope", FlagCharged); first {
		t.Fatal("flag of a missing record reported first")
	}
	if _, ok, _ := s.Get(ctx, "acme", KindBatch, "nope"); ok {
		t.Fatal("Flag created a record")
	}
	// PutNew keeps an existing record (and its flags).
	if added, err := s.PutNew(ctx, Object{Kind: KindBatch, ID: "file-a", Key: "acme", Target: "other"}, time.Hour); added || err != nil {
		t.Fatalf("PutNew over a record = %v, %v", added, err)
	}
	if b, _, _ := s.Get(ctx, "acme", KindBatch, "file-a"); b.Target != "oai" || !b.Charged {
		t.Fatalf("PutNew replaced the record: %+v", b)
	}
	if added, _ := s.PutNew(ctx, Object{Kind: KindFile, ID: "file-out", Key: "acme", Target: "oai", Created: 50}, time.Hour); !added {
		t.Fatal("PutNew of a new id did not add it")
	}

	n, err := s.Count(ctx, "acme")
	if err != nil || n != [NumKinds]int{4, 1, 0} {
		t.Fatalf("count = %v, %v", n, err)
	}
	if err := s.Delete(ctx, "acme", KindFile, "file-b"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(ctx, "acme", KindFile, "file-b"); ok {
		t.Fatal("deleted record still there")
	}
	if got, _ := list(Page{Limit: 10}); !reflect.DeepEqual(got, []string{"file-c", "file-a", "file-out"}) {
		t.Fatalf("list after delete = %v", got)
	}
}

func TestMemoryObjects(t *testing.T) {
	testObjectStore(t, NewMemoryObjects(0, nil))
}

func TestMemoryObjectsExpireAndBound(t *testing.T) {
	now := time.Unix(1000, 0)
	m := NewMemoryObjects(2, func() time.Time { return now })
	ctx := context.Background()
	for i := range 3 {
		_ = m.Put(ctx, Object{Kind: KindFile, ID: fmt.Sprint(i), Key: "k", Created: int64(i)}, time.Minute)
	}
	if _, ok, _ := m.Get(ctx, "k", KindFile, "0"); ok {
		t.Fatal("the oldest record kept past the bound")
	}
	now = now.Add(2 * time.Minute)
	if _, ok, _ := m.Get(ctx, "k", KindFile, "2"); ok {
		t.Fatal("expired record still owned")
	}
	if n, _ := m.Count(ctx, "k"); n[KindFile] != 0 {
		t.Fatalf("count after expiry = %d", n[KindFile])
	}
}

func redisObjects(t *testing.T, addr string) *RedisObjects {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return NewRedisObjects(c, "sy-test:")
}

func TestRedisObjects(t *testing.T) {
	testObjectStore(t, redisObjects(t, tenancytest.StartRedis(t)))
}

// Records expire with the retention, on Redis's clock, and leave the lists
// and counts with them; a second replica sees what the first recorded.
func TestRedisObjectsExpireAcrossReplicas(t *testing.T) {
	addr := tenancytest.StartRedis(t)
	a, b := redisObjects(t, addr), redisObjects(t, addr)
	ctx := context.Background()
	if err := a.Put(ctx, Object{Kind: KindMessageBatch, ID: "msgbatch_1", Key: "acme", Target: "claude", Created: 5}, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, Object{Kind: KindMessageBatch, ID: "msgbatch_2", Key: "acme", Target: "claude", Created: 6}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if o, ok, err := b.Get(ctx, "acme", KindMessageBatch, "msgbatch_1"); !ok || err != nil || o.Target != "claude" {
		t.Fatalf("replica b: %+v, %v, %v", o, ok, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, ok, _ := b.Get(ctx, "acme", KindMessageBatch, "msgbatch_1")
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("record did not expire")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n, err := b.Count(ctx, "acme"); err != nil || n[KindMessageBatch] != 1 {
		t.Fatalf("count after expiry = %v, %v", n, err)
	}
	objs, more, err := b.List(ctx, "acme", KindMessageBatch, Page{Limit: 10})
	if err != nil || more || len(objs) != 1 || objs[0].ID != "msgbatch_2" {
		t.Fatalf("list after expiry = %+v, %v, %v", objs, more, err)
	}
}
