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

	// Owners: the view across keys, by id; a deleted id has none, and a
	// batch id is not a file id.
	owners := make([]string, 5)
	if err := s.Owners(ctx, KindFile, []string{"file-a", "file-g", "file-b", "nope", "file-out"}, owners); err != nil {
		t.Fatal(err)
	}
	if want := []string{"acme", "globex", "", "", "acme"}; !reflect.DeepEqual(owners, want) {
		t.Fatalf("Owners = %q; want %q", owners, want)
	}
	if err := s.Owners(ctx, KindBatch, []string{"file-g", "file-a"}, owners[:2]); err != nil || owners[0] != "" || owners[1] != "acme" {
		t.Fatalf("batch Owners = %q, %v", owners[:2], err)
	}
	// Another key deleting an id it does not own leaves its owner entry.
	if err := s.Delete(ctx, "globex", KindFile, "file-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Owners(ctx, KindFile, []string{"file-a"}, owners[:1]); err != nil || owners[0] != "acme" {
		t.Fatalf("Owners after another key's delete = %q, %v", owners[:1], err)
	}

	// Paging over more records than a page, both ways, on a key of its
	// own: every record once, in order.
	for i := range 25 {
		put(Object{Kind: KindMessageBatch, ID: fmt.Sprintf("mb-%02d", i), Key: "paged", Target: "claude", Created: int64(i / 3), Seq: int64(100 + i)})
	}
	var got []string
	after := ""
	for {
		objs, more, err := s.List(ctx, "paged", KindMessageBatch, Page{Limit: 7, After: after})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(objs)...)
		if !more {
			break
		}
		after = objs[len(objs)-1].ID
	}
	var newest []string
	for i := 24; i >= 0; i-- {
		newest = append(newest, fmt.Sprintf("mb-%02d", i))
	}
	if !reflect.DeepEqual(got, newest) {
		t.Fatalf("paged list = %v; want %v", got, newest)
	}
	if objs, more, _ := s.List(ctx, "paged", KindMessageBatch, Page{Limit: 3, Before: "mb-10"}); !reflect.DeepEqual(ids(objs), []string{"mb-13", "mb-12", "mb-11"}) || !more {
		t.Fatalf("before mb-10 = %v, %v", ids(objs), more)
	}
	if objs, more, _ := s.List(ctx, "paged", KindMessageBatch, Page{Limit: 3, After: "mb-03", Ascending: true}); !reflect.DeepEqual(ids(objs), []string{"mb-04", "mb-05", "mb-06"}) || !more {
		t.Fatalf("ascending after mb-03 = %v, %v", ids(objs), more)
	}
	if _, _, err := s.List(ctx, "nobody", KindFile, Page{Limit: 3, After: "file-a"}); !errors.Is(err, ErrCursor) {
		t.Fatalf("a cursor on a key with no records: %v", err)
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
	owners := make([]string, 2)
	if err := m.Owners(ctx, KindFile, []string{"1", "2"}, owners); err != nil || owners[0] != "" || owners[1] != "" {
		t.Fatalf("Owners after expiry = %q, %v", owners, err)
	}
	if m.Len() != 0 {
		t.Fatalf("Len after expiry = %d", m.Len())
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
	owners := make([]string, 2)
	if err := b.Owners(ctx, KindMessageBatch, []string{"msgbatch_1", "msgbatch_2"}, owners); err != nil || owners[0] != "" || owners[1] != "acme" {
		t.Fatalf("Owners after expiry = %q, %v", owners, err)
	}
}
