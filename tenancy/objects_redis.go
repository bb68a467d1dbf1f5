package tenancy

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// RedisObjects is the ObjectStore shared by replicas. A key's objects of
// one kind live under one hash tag, prefix{o:<hex of the key's name>}, so
// a record and its indexes change in one script (atomic, and one Redis
// Cluster slot):
//
//   - …:<kind>:id:<id>  a hash: the record's fields, expiring with it;
//   - …:<kind>:order    a sorted set of "<created><seq>:<id>" members
//     (score 0: lexicographic order is newest-last), for lists;
//   - …:<kind>:exp      the same members scored by expiry (ms), so expired
//     ones leave the order set when the next record is written or a count
//     is taken.
//
// Besides, each id has an owner entry across keys, prefix oid:<kind>:<id>,
// holding the owner key's name and expiring with the record (Owners). It
// lives in another slot than the record, so it is written in the same
// pipeline but not the same script: before the record (Put), so no record
// is ever without one; a leftover entry of a record that failed names the
// key the id was handed to, which is still its owner.
//
// Safe for concurrent use.
type RedisObjects struct {
	c      rueidis.Client
	prefix string
}

// NewRedisObjects returns a Redis store on client c; every key it writes
// starts with prefix (quotas.redis.key_prefix).
func NewRedisObjects(c rueidis.Client, prefix string) *RedisObjects {
	return &RedisObjects{c: c, prefix: prefix}
}

// base is the start of every Redis key of key's objects of kind.
func (r *RedisObjects) base(key string, kind Kind) string {
	return r.prefix + "{o:" + hex.EncodeToString([]byte(key)) + "}:" + kind.String()
}

// ownerKey is the owner entry of id of kind.
func (r *RedisObjects) ownerKey(kind Kind, id string) string {
	return r.prefix + "oid:" + kind.String() + ":" + id
}

func (r *RedisObjects) keys(key string, kind Kind, id string) []string {
	b := r.base(key, kind)
	return []string{b + ":id:" + id, b + ":order", b + ":exp"}
}

// member is o's entry in the order set: created and record time, fixed
// width, then the id.
func member(o *Object) string {
	return fmt.Sprintf("%012d%017d:%s", max(o.Created, 0), max(o.Seq, 0), o.ID)
}

// idOf returns the id of an order set member.
func idOf(m string) string {
	if i := strings.IndexByte(m, ':'); i >= 0 {
		return m[i+1:]
	}
	return m
}

// pruneLua drops the members whose record expired (KEYS[2] order,
// KEYS[3] exp) as of the server's clock.
const pruneLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for i = 1, #gone, 500 do
  local part = {unpack(gone, i, math.min(i + 499, #gone))}
  redis.call('ZREM', KEYS[2], unpack(part))
  redis.call('ZREM', KEYS[3], unpack(part))
end
`

// putScript writes one record: ARGV[1] retention (ms), ARGV[2] its order
// member, ARGV[3] "1" to keep an existing record (returns 0 then), then
// the hash's field/value pairs.
var putScript = rueidis.NewLuaScript(pruneLua + `
local old = redis.call('HGET', KEYS[1], 'om')
if old then
  if ARGV[3] == '1' then return 0 end
  redis.call('ZREM', KEYS[2], old)
  redis.call('ZREM', KEYS[3], old)
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], 'om', ARGV[2], unpack(ARGV, 4))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[1])
return 1
`)

// deleteScript forgets one record and its index entries.
var deleteScript = rueidis.NewLuaScript(`
local old = redis.call('HGET', KEYS[1], 'om')
if old then
  redis.call('ZREM', KEYS[2], old)
  redis.call('ZREM', KEYS[3], old)
end
return redis.call('DEL', KEYS[1])
`)

// dropOwnerScript removes an owner entry (KEYS[1]) that names the key
// ARGV[1].
var dropOwnerScript = rueidis.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// flagScript sets the field ARGV[1] of an existing record, once.
var flagScript = rueidis.NewLuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], ARGV[1], '1')
`)

// countScript prunes expired members and counts the rest.
var countScript = rueidis.NewLuaScript(pruneLua + `
return redis.call('ZCARD', KEYS[2])
`)

// fields returns o as the hash's field/value pairs.
func fields(o *Object) []string {
	f := []string{"k", o.Key, "t", o.Target, "c", strconv.FormatInt(o.Created, 10), "s", strconv.FormatInt(o.Seq, 10),
		"e", strconv.FormatInt(o.Tokens, 10), "d", strconv.FormatInt(o.Day, 10), "mo", strconv.FormatInt(o.Month, 10)}
	if o.Purpose != "" {
		f = append(f, "p", o.Purpose)
	}
	if o.Surface != "" {
		f = append(f, "sf", o.Surface)
	}
	if len(o.Models) > 0 {
		f = append(f, "m", strings.Join(o.Models[:min(len(o.Models), MaxModels)], "\n"))
	}
	if o.Input != "" {
		f = append(f, "i", o.Input)
	}
	if o.Released {
		f = append(f, "r", "1")
	}
	if o.Charged {
		f = append(f, "ch", "1")
	}
	return f
}

// objectOf reads a record's hash (h empty: no record).
func objectOf(kind Kind, id string, h map[string]string) (Object, bool) {
	if len(h) == 0 {
		return Object{}, false
	}
	num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
	o := Object{Kind: kind, ID: id, Key: h["k"], Target: h["t"], Created: num("c"), Seq: num("s"), Purpose: h["p"],
		Surface: h["sf"], Tokens: num("e"), Day: num("d"), Month: num("mo"), Input: h["i"],
		Released: h["r"] == "1", Charged: h["ch"] == "1"}
	if m := h["m"]; m != "" {
		o.Models = strings.Split(m, "\n")
	}
	return o, true
}

func (r *RedisObjects) put(ctx context.Context, o Object, retention time.Duration, keep bool) (bool, error) {
	if o.Kind >= NumKinds || o.ID == "" {
		return false, fmt.Errorf("tenancy: cannot record an object of kind %d with id %q", o.Kind, o.ID)
	}
	if o.Seq == 0 {
		o.Seq = time.Now().UnixMicro()
	}
	k := "0"
	if keep {
		k = "1"
	}
	ms := max(retention.Milliseconds(), 1)
	args := append([]string{strconv.FormatInt(ms, 10), member(&o), k}, fields(&o)...)
	// The owner entry first, so no record is ever without one; PutNew's
	// (NX) keeps an entry already there with its expiry, as it keeps the
	// record.
	own := r.c.B().Set().Key(r.ownerKey(o.Kind, o.ID)).Value(o.Key)
	var cmd rueidis.Completed
	if keep {
		cmd = own.Nx().PxMilliseconds(ms).Build()
	} else {
		cmd = own.PxMilliseconds(ms).Build()
	}
	if err := r.c.Do(ctx, cmd).Error(); err != nil && !rueidis.IsRedisNil(err) {
		return false, err
	}
	n, err := putScript.Exec(ctx, r.c, r.keys(o.Key, o.Kind, o.ID), args).AsInt64()
	return n == 1, err
}

// Put implements ObjectStore: the owner entry, then the record (one
// script call).
func (r *RedisObjects) Put(ctx context.Context, o Object, retention time.Duration) error {
	_, err := r.put(ctx, o, retention, false)
	return err
}

// PutNew implements ObjectStore.
func (r *RedisObjects) PutNew(ctx context.Context, o Object, retention time.Duration) (bool, error) {
	return r.put(ctx, o, retention, true)
}

// Get implements ObjectStore: one HGETALL.
func (r *RedisObjects) Get(ctx context.Context, key string, kind Kind, id string) (Object, bool, error) {
	h, err := r.c.Do(ctx, r.c.B().Hgetall().Key(r.keys(key, kind, id)[0]).Build()).AsStrMap()
	if err != nil {
		return Object{}, false, err
	}
	o, ok := objectOf(kind, id, h)
	return o, ok, nil
}

// Delete implements ObjectStore: two script calls, the record and then
// its owner entry (when it names key).
func (r *RedisObjects) Delete(ctx context.Context, key string, kind Kind, id string) error {
	if err := deleteScript.Exec(ctx, r.c, r.keys(key, kind, id), nil).Error(); err != nil {
		return err
	}
	return dropOwnerScript.Exec(ctx, r.c, []string{r.ownerKey(kind, id)}, []string{key}).Error()
}

// Owners implements ObjectStore: one GET per id, in one pipeline.
func (r *RedisObjects) Owners(ctx context.Context, kind Kind, ids []string, owners []string) error {
	if len(ids) == 0 {
		return nil
	}
	cmds := make(rueidis.Commands, len(ids))
	for i, id := range ids {
		cmds[i] = r.c.B().Get().Key(r.ownerKey(kind, id)).Build()
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

// Flag implements ObjectStore: one script call (HSETNX on an existing
// record).
func (r *RedisObjects) Flag(ctx context.Context, key string, kind Kind, id string, f Flag) (bool, error) {
	field := "r"
	if f == FlagCharged {
		field = "ch"
	}
	n, err := flagScript.Exec(ctx, r.c, r.keys(key, kind, id)[:1], []string{field}).AsInt64()
	return n == 1, err
}

// List implements ObjectStore: the page's members from the order set,
// then their records in one pipeline; members whose record expired are
// skipped and dropped.
func (r *RedisObjects) List(ctx context.Context, key string, kind Kind, p Page) ([]Object, bool, error) {
	ks := r.keys(key, kind, "")
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	cursor := p.After
	if cursor == "" {
		cursor = p.Before
	}
	var from string // the range's open end: after (or before) the cursor
	if cursor != "" {
		o, ok, err := r.Get(ctx, key, kind, cursor)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return nil, false, ErrCursor
		}
		from = member(&o)
	}
	var out []Object
	// Expired members are dropped as found, and the range read again past
	// them: a few rounds at most.
	for round := 0; round < 8 && len(out) < limit; round++ {
		want := int64(limit - len(out) + 1)
		var cmd rueidis.Completed
		// Newest first is descending order; Before (newer than the
		// cursor) reads upwards from it, and is reversed below.
		up := p.Ascending != (p.Before != "")
		if up {
			lo := "-"
			if from != "" {
				lo = "(" + from
			}
			cmd = r.c.B().Zrange().Key(ks[1]).Min(lo).Max("+").Bylex().Limit(0, want).Build()
		} else {
			hi := "+"
			if from != "" {
				hi = "(" + from
			}
			cmd = r.c.B().Zrange().Key(ks[1]).Min(hi).Max("-").Bylex().Rev().Limit(0, want).Build()
		}
		members, err := r.c.Do(ctx, cmd).AsStrSlice()
		if err != nil {
			return nil, false, err
		}
		if len(members) == 0 {
			break
		}
		cmds := make(rueidis.Commands, len(members))
		for i, m := range members {
			cmds[i] = r.c.B().Hgetall().Key(r.base(key, kind) + ":id:" + idOf(m)).Build()
		}
		var stale []string
		for i, res := range r.c.DoMulti(ctx, cmds...) {
			h, err := res.AsStrMap()
			if err != nil {
				return nil, false, err
			}
			if o, ok := objectOf(kind, idOf(members[i]), h); ok {
				out = append(out, o)
			} else {
				stale = append(stale, members[i])
			}
		}
		if len(stale) > 0 {
			_ = r.c.Do(ctx, r.c.B().Zrem().Key(ks[1]).Member(stale...).Build()).Error()
		}
		from = members[len(members)-1]
		if int64(len(members)) < want {
			break
		}
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	if p.Before != "" {
		// Read upwards from the cursor: the page is the nearest ones, in
		// the list's own order.
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, more, nil
}

// Count implements ObjectStore: one script call per kind.
func (r *RedisObjects) Count(ctx context.Context, key string) ([NumKinds]int, error) {
	var n [NumKinds]int
	for k := Kind(0); k < NumKinds; k++ {
		c, err := countScript.Exec(ctx, r.c, r.keys(key, k, "")[:3], nil).AsInt64()
		if err != nil {
			return n, err
		}
		n[k] = int(c)
	}
	return n, nil
}
