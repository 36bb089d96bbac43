package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/database"
	"github.com/aware-autoscaler/aware/workloads/objstore"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Modes of the --services flag of commands that run segments needing an
// object store and a database.
const (
	Local = "local" // start versitygw and PostgreSQL on loopback
	Env   = "env"   // connect to AWARE_S3_* and AWARE_DATABASE_URL
	None  = "none"  // no external services: skip segments that need them
)

// Start fills env.Objects and env.DB according to mode and returns a
// function that stops what it started, and the environment (AWARE_S3_*,
// AWARE_DATABASE_URL) with which a child process reaches the same services.
// dir holds local servers' data.
func Start(ctx context.Context, mode, dir string, env *segments.Env) (stop func(), childEnv []string, err error) {
	var stops []func() error
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			if err := stops[i](); err != nil {
				slog.Warn("stopping service", "err", err)
			}
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	var (
		s3   objstore.Config
		dbu  string
		pids []string // of services this process started, for metering
	)
	switch mode {
	case None:
		return stop, nil, nil
	case Local:
		ls, err := objstore.StartLocal(ctx, mkdir(dir, "s3"))
		if err != nil {
			return stop, nil, fmt.Errorf("start local object store: %w", err)
		}
		stops = append(stops, ls.Stop)
		ld, err := database.StartLocal(ctx, mkdir(dir, "pg"))
		if err != nil {
			return stop, nil, fmt.Errorf("start local PostgreSQL: %w", err)
		}
		stops = append(stops, ld.Stop)
		s3, dbu = ls.Config(), ld.URL()
		pids = []string{strconv.Itoa(ld.Pid()), strconv.Itoa(ls.Pid())}
	case Env:
		s3, dbu = objstore.ConfigFromEnv(), database.URLFromEnv()
		if s3.Endpoint == "" || dbu == "" {
			return stop, nil, errors.New("--services env: set AWARE_S3_ENDPOINT (with AWARE_S3_ACCESS_KEY, AWARE_S3_SECRET_KEY) and AWARE_DATABASE_URL")
		}
	default:
		return stop, nil, fmt.Errorf("--services %q: want %s, %s or %s", mode, Local, Env, None)
	}
	obj, err := objstore.Connect(ctx, s3)
	if err != nil {
		return stop, nil, fmt.Errorf("object store: %w", err)
	}
	db, err := database.Connect(ctx, dbu)
	if err != nil {
		return stop, nil, fmt.Errorf("database: %w", err)
	}
	stops = append(stops, func() error { db.Close(); return nil })
	env.Objects, env.DB = obj, db
	childEnv = []string{
		objstore.EnvEndpoint + "=" + s3.Endpoint, objstore.EnvAccessKey + "=" + s3.AccessKey,
		objstore.EnvSecretKey + "=" + s3.SecretKey, objstore.EnvBucket + "=" + s3.Bucket,
		objstore.EnvRegion + "=" + s3.Region, database.EnvURL + "=" + dbu,
	}
	if len(pids) > 0 {
		childEnv = append(childEnv, calibration.EnvServicePIDs+"="+strings.Join(pids, ","))
	}
	return stop, childEnv, nil
}

// Scratch returns a calibration.Services that makes a temporary directory
// named after prefix, an Env with a scratch folder in it and the seed, and
// starts the services of mode in it (Start); its cleanup stops them and
// removes the directory.
func Scratch(mode, prefix string) calibration.Services {
	return func(ctx context.Context, seed int64) (env segments.Env, childEnv []string, cleanup func(), err error) {
		dir, err := os.MkdirTemp("", prefix)
		if err != nil {
			return segments.Env{}, nil, nil, err
		}
		env = segments.Env{Dir: mkdir(dir, "scratch"), Seed: seed}
		stop, childEnv, err := Start(ctx, mode, dir, &env)
		if err != nil {
			os.RemoveAll(dir)
			return segments.Env{}, nil, nil, err
		}
		return env, childEnv, func() { stop(); os.RemoveAll(dir) }, nil
	}
}

func mkdir(parent, name string) string {
	d := filepath.Join(parent, name)
	_ = os.MkdirAll(d, 0o755)
	return d
}
