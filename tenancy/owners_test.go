package tenancy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/switchyard/switchyard/tenancy/tenancytest"
)

func TestMemoryOwners(t *testing.T) {
	now := time.Unix(1000, 0)
	m := NewMemory(3, func() time.Time { return now })
	ctx := context.Background()
	_ = m.Remember(ctx, "r1", "acme", time.Hour)
	_ = m.Remember(ctx, "r2", "globex", time.Minute)
	if o, _ := m.Owner(ctx, "r1"); o != "acme" {
		t.Fatalf("r1 owner %q", o)
	}
	if o, _ := m.Owner(ctx, "nope"); o != "" {
		t.Fatalf("unknown owner %q", o)
	}
	now = now.Add(2 * time.Minute)
	if o, _ := m.Owner(ctx, "r2"); o != "" {
		t.Fatalf("expired r2 still owned by %q", o)
	}
	// Bounded: the oldest id goes first.
	for i := range 5 {
		_ = m.Remember(ctx, fmt.Sprintf("x%d", i), "k", time.Hour)
	}
	if m.Len() != 3 {
		t.Fatalf("len %d; want 3", m.Len())
	}
	if o, _ := m.Owner(ctx, "r1"); o != "" {
		t.Fatal("r1 kept past the bound")
	}
	if o, _ := m.Owner(ctx, "x4"); o != "k" {
		t.Fatal("newest id forgotten")
	}
}

func TestRedisOwners(t *testing.T) {
	addr := tenancytest.StartRedis(t)
	var stores []*Redis
	for range 3 { // three replicas, one Redis
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		stores = append(stores, NewRedis(c, "sy-test:"))
	}
	ctx := context.Background()
	if err := stores[0].Remember(ctx, "resp_1", "acme", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		if o, err := s.Owner(ctx, "resp_1"); err != nil || o != "acme" {
			t.Fatalf("replica %d: owner %q err %v", i, o, err)
		}
		if o, err := s.Owner(ctx, "resp_unknown"); err != nil || o != "" {
			t.Fatalf("replica %d: unknown owner %q err %v", i, o, err)
		}
	}
	// The key is under the prefix and expires.
	ttl, err := stores[1].c.Do(ctx, stores[1].c.B().Ttl().Key("sy-test:resp:resp_1").Build()).AsInt64()
	if err != nil || ttl < 1 || ttl > 2 {
		t.Fatalf("ttl %d err %v", ttl, err)
	}
}

// testOwnersMany: RememberAll records every id for the key, and Owners
// answers each id's owner ("" for none), on any OwnerStore.
func testOwnersMany(t *testing.T, s OwnerStore) {
	ctx := context.Background()
	if err := s.RememberAll(ctx, []string{"msg_1", "rs_1"}, "acme", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Remember(ctx, "msg_2", "globex", time.Hour); err != nil {
		t.Fatal(err)
	}
	owners := make([]string, 4)
	if err := s.Owners(ctx, []string{"rs_1", "msg_2", "msg_none", "msg_1"}, owners); err != nil {
		t.Fatal(err)
	}
	if want := []string{"acme", "globex", "", "acme"}; fmt.Sprint(owners) != fmt.Sprint(want) {
		t.Fatalf("Owners = %q; want %q", owners, want)
	}
	if err := s.RememberAll(ctx, nil, "acme", time.Hour); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryOwnersMany(t *testing.T) {
	m := NewMemory(0, nil)
	testOwnersMany(t, m)
	if m.Len() != 3 {
		t.Fatalf("Len = %d; want 3", m.Len())
	}
}

func TestRedisOwnersMany(t *testing.T) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{tenancytest.StartRedis(t)}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	testOwnersMany(t, NewRedis(c, "sy-test:"))
}
