package suite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/mirror"
)

// Results keeps a run's output folder in an S3-compatible store: each
// shard's Out under URL/shard-I-of-N (shard-1-of-1 unsharded), pulled when
// the run starts (a retried shard resumes) and pushed as it runs and when
// it ends, for `aware study merge STUDY URL` to put together.
type Results struct {
	// URL is the run's folder, s3://BUCKET/PREFIX.
	URL string
	// Connect opens a bucket of the store; Merge uses it too, for shard
	// arguments that are URLs.
	Connect Connect
	// Every is how often the folder is pushed (mirror.DefaultEvery).
	Every time.Duration
}

// Connect opens one bucket of the S3-compatible store (objstore.Connect
// with the AWARE_S3_* endpoint and keys).
type Connect func(ctx context.Context, bucket string) (mirror.Store, error)

// finalPush bounds the last push, made after the run's context may be
// cancelled (a pod told to stop has its grace period for it).
const finalPush = 2 * time.Minute

// startResults pulls the shard's folder into o.Out and starts pushing it;
// stop pushes what is left.
func (o Options) startResults(ctx context.Context) (stop func() error, err error) {
	u, err := mirror.ParseURL(o.Results.URL)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if o.Results.Connect == nil {
		return nil, errors.New("results: no way to connect to the object store")
	}
	store, err := o.Results.Connect(ctx, u.Bucket)
	if err != nil {
		return nil, fmt.Errorf("results %s: %w", u, err)
	}
	u = u.Join(mirror.ShardName(o.Shard.Index, o.Shard.Of))
	every := o.Results.Every
	if every == 0 {
		every = mirror.DefaultEvery
	}
	opts := []mirror.Option{mirror.WithEvery(every)}
	if o.Log != nil {
		opts = append(opts, mirror.WithLogger(slog.New(slog.NewTextHandler(o.Log, nil))))
	}
	m, err := mirror.Start(ctx, store, u, o.Out, opts...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "results: %s kept in %s (pulled first; pushed every %s and at the end)\n", o.Out, u, every)
	return func() error {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalPush)
		defer cancel()
		if err := m.Stop(pctx); err != nil {
			return fmt.Errorf("results: %w", err)
		}
		fmt.Fprintf(o.Log, "results: pushed to %s\n", u)
		return nil
	}, nil
}

// hint adds to a run's error that a folder refused for another
// configuration may have come from the store: the folder to clear, or to
// replace by another --results, is there.
func (r Results) hint(err error) error {
	if err == nil || r.URL == "" || !errors.Is(err, study.ErrOtherConfig) {
		return err
	}
	return fmt.Errorf("%w (the run pulled its folder from %s first: give the run another --results, or remove that folder of the store)", err, r.URL)
}

// fetchShards replaces each shard argument that is a store's URL (a run's
// folder, every shard below it) by local copies of its shards' folders of
// the study; remove deletes the copies.
func fetchShards(ctx context.Context, name string, shards []string, connect Connect) (dirs []string, remove func(), err error) {
	remove = func() {}
	tmp := ""
	for _, s := range shards {
		if !mirror.IsURL(s) {
			dirs = append(dirs, s)
			continue
		}
		u, err := mirror.ParseURL(s)
		if err != nil {
			return nil, remove, err
		}
		if connect == nil {
			return nil, remove, fmt.Errorf("%s: no way to connect to the object store", u)
		}
		store, err := connect(ctx, u.Bucket)
		if err != nil {
			return nil, remove, fmt.Errorf("%s: %w", u, err)
		}
		if tmp == "" {
			if tmp, err = os.MkdirTemp("", "aware-merge-"); err != nil {
				return nil, remove, err
			}
			remove = func() { _ = os.RemoveAll(tmp) }
		}
		got, err := mirror.Fetch(ctx, store, u, name, filepath.Join(tmp, strconv.Itoa(len(dirs))))
		if err != nil {
			return nil, remove, err
		}
		dirs = append(dirs, got...)
	}
	return dirs, remove, nil
}
