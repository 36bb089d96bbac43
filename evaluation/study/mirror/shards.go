package mirror

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ShardName is the folder of shard i of n below a run's URL
// ("shard-2-of-4"; an unsharded run is shard 1 of 1).
func ShardName(i, n int) string { return fmt.Sprintf("shard-%d-of-%d", i, n) }

// parseShardName reads ShardName's form.
func parseShardName(s string) (i, n int, ok bool) {
	rest, ok := strings.CutPrefix(s, "shard-")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(rest, "-of-")
	if !ok {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || n < 1 || i < 1 || i > n || ShardName(i, n) != s {
		return 0, 0, false
	}
	return i, n, true
}

// Fetch downloads the folder sub (a study's name) of every shard under the
// store folder u into dir/<shard>/<sub>, and returns those folders in
// shard order. It refuses a folder without shards, with shards of
// different counts, with a shard missing, or with a shard that holds no
// sub. Give it an empty dir: a file dir already holds is kept as it is.
func Fetch(ctx context.Context, store Store, u URL, sub, dir string) ([]string, error) {
	if err := checkKey(sub); err != nil {
		return nil, fmt.Errorf("mirror: fetch %s: folder %w", u, err)
	}
	prefix := ""
	if u.Prefix != "" {
		prefix = u.Prefix + "/"
	}
	keys, err := store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("mirror: fetch %s: %w", u, err)
	}
	counts := map[int]map[int]bool{} // n → indices found
	holds := map[string]bool{}       // shards holding sub
	for _, k := range keys {
		first, rest, _ := strings.Cut(strings.TrimPrefix(k, prefix), "/")
		i, n, ok := parseShardName(first)
		if !ok {
			continue
		}
		if counts[n] == nil {
			counts[n] = map[int]bool{}
		}
		counts[n][i] = true
		if strings.HasPrefix(rest, sub+"/") {
			holds[first] = true
		}
	}
	n, err := shardCount(u, counts)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for i := 1; i <= n; i++ {
		name := ShardName(i, n)
		if !holds[name] {
			return nil, fmt.Errorf("mirror: fetch %s: %s holds no %s/ folder (did its run include %s?)", u, name, sub, sub)
		}
		from := u.Join(name + "/" + sub)
		to := filepath.Join(dir, name, filepath.FromSlash(sub))
		if _, err := download(ctx, store, from, to, func(string, stamp) {}); err != nil {
			return nil, fmt.Errorf("mirror: fetch %s into %s: %w", from, to, err)
		}
		dirs = append(dirs, to)
	}
	return dirs, nil
}

// shardCount is the one shard count under u whose every shard is there.
func shardCount(u URL, counts map[int]map[int]bool) (int, error) {
	switch len(counts) {
	case 0:
		return 0, fmt.Errorf("mirror: fetch %s: no shard folders (shard-I-of-N/) there", u)
	case 1:
	default:
		var ns []string
		for n := range counts {
			ns = append(ns, strconv.Itoa(n))
		}
		sort.Strings(ns)
		return 0, fmt.Errorf("mirror: fetch %s: shards of runs split %s ways meet there; give each run its own folder", u, strings.Join(ns, ", "))
	}
	n := 0
	for k := range counts {
		n = k
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if !counts[n][i] {
			missing = append(missing, ShardName(i, n))
		}
	}
	if len(missing) > 0 {
		return 0, fmt.Errorf("mirror: fetch %s: %d of %d shards missing (%s): wait for them or rerun them", u, len(missing), n, strings.Join(missing, ", "))
	}
	return n, nil
}
