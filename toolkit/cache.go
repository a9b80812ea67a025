package toolkit

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/agnogo/agnogo/tool"
)

// DefaultCacheMaxEntries bounds a result cache unless
// [Options.CacheMaxEntries] says otherwise.
const DefaultCacheMaxEntries = 1024

// Cache keeps tool results for a time, keyed by tool name and arguments
// (compared as compact JSON, so white space does not matter). It is safe
// for concurrent use; at most maxEntries results are kept, the least
// recently used dropped first.
type Cache struct {
	ttl        time.Duration
	maxEntries int
	now        func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element
	order   *list.List // front: most recently used
}

type cacheEntry struct {
	key     string
	result  string
	expires time.Time
}

// NewCache returns a cache keeping results for ttl ([DefaultCacheTTL] when
// 0), at most maxEntries of them ([DefaultCacheMaxEntries] when 0), on the
// clock now (time.Now when nil).
func NewCache(ttl time.Duration, maxEntries int, now func() time.Time) *Cache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	if maxEntries <= 0 {
		maxEntries = DefaultCacheMaxEntries
	}
	if now == nil {
		now = time.Now
	}
	return &Cache{ttl: ttl, maxEntries: maxEntries, now: now, entries: map[string]*list.Element{}, order: list.New()}
}

// Wrap returns t answering from the cache: a call whose tool name and
// arguments were answered within the TTL gets that answer without calling
// t; a successful answer is kept. Tools that pause the run (confirmation,
// user input, external execution) are returned unwrapped: a person's
// decision is not a cacheable result.
func (c *Cache) Wrap(t tool.Tool) tool.Tool {
	spec := t.Spec()
	if spec.RequiresConfirmation || spec.RequiresUserInput || spec.ExternalExecution {
		return t
	}
	return &cached{Tool: t, name: spec.Name, cache: c}
}

// Len returns how many results the cache holds, expired ones included
// until they are next looked up or pushed out.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *Cache) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	element, ok := c.entries[key]
	if !ok {
		return "", false
	}
	entry := element.Value.(*cacheEntry)
	if !c.now().Before(entry.expires) {
		c.order.Remove(element)
		delete(c.entries, key)
		return "", false
	}
	c.order.MoveToFront(element)
	return entry.result, true
}

func (c *Cache) put(key, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	expires := c.now().Add(c.ttl)
	if element, ok := c.entries[key]; ok {
		entry := element.Value.(*cacheEntry)
		entry.result, entry.expires = result, expires
		c.order.MoveToFront(element)
		return
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, result: result, expires: expires})
	for c.order.Len() > c.maxEntries {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).key)
	}
}

// cached is a tool answering from a [Cache].
type cached struct {
	tool.Tool
	name  string
	cache *Cache
}

// Call implements [tool.Tool].
func (c *cached) Call(ctx context.Context, args json.RawMessage) (string, error) {
	key := c.name + "\x00" + canonical(args)
	if result, ok := c.cache.get(key); ok {
		return result, nil
	}
	result, err := c.Tool.Call(ctx, args)
	if err != nil {
		return result, err
	}
	c.cache.put(key, result)
	return result, nil
}

// ValidateArgs implements [tool.Validator] for tools that validate.
func (c *cached) ValidateArgs(args json.RawMessage) error {
	if v, ok := c.Tool.(tool.Validator); ok {
		return v.ValidateArgs(args)
	}
	return nil
}

// canonical is args as compact JSON with its object keys sorted, so two
// calls meaning the same share a key.
func canonical(args json.RawMessage) string {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return "{}"
	}
	decoder := json.NewDecoder(bytes.NewReader(trimmed))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		return string(trimmed)
	}
	// encoding/json writes map keys sorted.
	encoded, err := json.Marshal(value)
	if err != nil {
		return string(trimmed)
	}
	return string(encoded)
}
