package router

import (
	"reflect"
	"testing"
)

func TestBindReplacesClaims(t *testing.T) {
	k := &KeySpec{User: []byte("acme"), HasUser: true, Metadata: []Pair{{Key: []byte("tier"), Value: []byte("gold")}}}
	r := Request{User: []byte("vip"), HasUser: true, Metadata: []Pair{
		{Key: []byte("tier"), Value: []byte("free")}, {Key: []byte("team"), Value: []byte("x")}}}
	buf := Bind(&r, k, nil)
	want := []Pair{{Key: []byte("tier"), Value: []byte("gold")}, {Key: []byte("team"), Value: []byte("x")}}
	if string(r.User) != "acme" || !r.HasUser || !reflect.DeepEqual(r.Metadata, want) || len(buf) != 2 {
		t.Errorf("bound request %+v", r)
	}
	// A bound user counts even when the request has none.
	var bare Request
	Bind(&bare, k, nil)
	if !bare.HasUser || string(bare.User) != "acme" {
		t.Errorf("bare request %+v", bare)
	}
	// Nothing bound: the request's claims stand.
	claim := Request{User: []byte("vip"), HasUser: true}
	Bind(&claim, &KeySpec{}, nil)
	if string(claim.User) != "vip" || claim.Metadata != nil {
		t.Errorf("unbound key changed %+v", claim)
	}
}

func TestModelsFor(t *testing.T) {
	s, err := Compile([]RuleSpec{
		{Key: KeyMetadata, Field: "region", Value: "eu", Chain: []int{1}},
		{Key: KeyUser, Value: "vip", Chain: []int{2}},
	}, []TargetSpec{
		{Name: "us", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"gpt-4o", "cheap"}},
		{Name: "eu", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"gpt-4o", "mistral"}},
		{Name: "vip", Provider: "anthropic", Surfaces: 1 << SurfaceChat, Models: []string{"claude-*"}},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ms []ModelInfo) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, m.ID+"/"+m.OwnedBy)
		}
		return out
	}
	eu := KeySpec{Metadata: []Pair{{Key: []byte("region"), Value: []byte("eu")}}}
	vip := KeySpec{User: []byte("vip"), HasUser: true, Models: []string{"claude-3", "claude-x*", "gpt-4o"}}
	for _, c := range []struct {
		name string
		k    KeySpec
		want []string
	}{
		// Unbound: as Models. mistral is eu's but reaches it on no bare request.
		{"open", KeySpec{}, []string{"cheap/openai", "gpt-4o/openai"}},
		// Bound to region eu: chat and completions route to eu; embeddings
		// and images ignore metadata and reach us.
		{"eu", eu, []string{"cheap/openai", "gpt-4o/openai", "mistral/openai"}},
		// Bound to vip: every surface goes to the vip chain; its allow-list
		// names claude-3 exactly (listed) and gpt-4o (not served there).
		{"vip", vip, []string{"claude-3/anthropic"}},
	} {
		if got := ids(s.ModelsFor(&c.k)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v; want %v", c.name, got, c.want)
		}
	}
	if got := ids(s.Models()); !reflect.DeepEqual(got, []string{"cheap/openai", "gpt-4o/openai"}) {
		t.Errorf("Models %v", got)
	}
}

func TestIdentityKey(t *testing.T) {
	s, err := Compile([]RuleSpec{
		{Key: KeyMetadata, Field: "region", Value: "eu", Chain: []int{0}},
		{Key: KeyUser, Value: "vip", Chain: []int{0}},
	}, []TargetSpec{{Name: "a", Surfaces: AllSurfaces}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	md := func(k, v string) []Pair { return []Pair{{Key: []byte(k), Value: []byte(v)}} }
	same := [][2]KeySpec{
		{{}, {User: []byte("acme"), HasUser: true}}, // no rule names acme
		{{}, {Metadata: md("region", "us")}},        // nor region us
		{{Metadata: md("region", "eu")}, {Metadata: md("region", "eu"), User: []byte("x"), HasUser: true}},
	}
	for _, p := range same {
		if s.IdentityKey(&p[0]) != s.IdentityKey(&p[1]) {
			t.Errorf("%+v and %+v route alike", p[0], p[1])
		}
	}
	differ := [][2]KeySpec{
		{{}, {User: []byte("vip"), HasUser: true}},
		{{}, {Metadata: md("region", "eu")}},
		{{}, {Models: []string{"a"}}},
		{{Models: []string{}}, {}},
	}
	for _, p := range differ {
		if s.IdentityKey(&p[0]) == s.IdentityKey(&p[1]) {
			t.Errorf("%+v and %+v do not route alike", p[0], p[1])
		}
	}
}
