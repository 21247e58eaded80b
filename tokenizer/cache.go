package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync"
)

// wordCache remembers the ids of recently encoded words. It is bounded
// (wordCacheShards × wordCacheShardCap words, each shorter than
// maxCachedWord bytes, as Hugging Face caches words below 256 bytes) and
// safe for concurrent use: the words are spread over shards, each behind
// its own lock, and a full shard starts over empty, so the cache follows
// the text it sees instead of keeping its first words forever.
type wordCache struct {
	seed   maphash.Seed
	shards [wordCacheShards]cacheShard
}

const (
	wordCacheShards   = 64
	wordCacheShardCap = 1024
	maxCachedWord     = 256
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
	_  [32]byte // keep shards on separate cache lines
}

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed()}
}

func (c *wordCache) shard(w string) *cacheShard {
	return &c.shards[maphash.String(c.seed, w)%wordCacheShards]
}

// get returns the cached ids of w; the slice is shared and read-only.
func (c *wordCache) get(w string) ([]int32, bool) {
	s := c.shard(w)
	s.mu.RLock()
	ids, ok := s.m[w]
	s.mu.RUnlock()
	return ids, ok
}

// put caches the ids of w (copied).
func (c *wordCache) put(w string, ids []int) {
	own := make([]int32, len(ids))
	for i, id := range ids {
		own[i] = int32(id)
	}
	s := c.shard(w)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= wordCacheShardCap {
		s.m = make(map[string][]int32, wordCacheShardCap)
	}
	s.m[strings.Clone(w)] = own
	s.mu.Unlock()
}
