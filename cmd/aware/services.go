package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/database"
	"github.com/aware-autoscaler/aware/workloads/objstore"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Service modes for commands that run segments needing an object store and a
// database.
const (
	servicesLocal = "local" // start versitygw and PostgreSQL on loopback
	servicesEnv   = "env"   // connect to AWARE_S3_* and AWARE_DATABASE_URL
	servicesNone  = "none"  // no external services: skip segments that need them
)

// startServices fills env.Objects and env.DB according to mode and returns a
// function that stops what it started, and the environment (AWARE_S3_*,
// AWARE_DATABASE_URL) with which a child process reaches the same services.
// dir holds local servers' data.
func startServices(ctx context.Context, mode, dir string, env *segments.Env) (stop func(), childEnv []string, err error) {
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
	case servicesNone:
		return stop, nil, nil
	case servicesLocal:
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
	case servicesEnv:
		s3, dbu = objstore.ConfigFromEnv(), database.URLFromEnv()
		if s3.Endpoint == "" || dbu == "" {
			return stop, nil, errors.New("--services env: set AWARE_S3_ENDPOINT (with AWARE_S3_ACCESS_KEY, AWARE_S3_SECRET_KEY) and AWARE_DATABASE_URL")
		}
	default:
		return stop, nil, fmt.Errorf("--services %q: want %s, %s or %s", mode, servicesLocal, servicesEnv, servicesNone)
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

// serviceMeter meters the services whose process IDs env (a childEnv of
// startServices, or this process's environment when nil) names, or returns
// nil when it names none: services reached through --services env run
// elsewhere and cannot be metered.
func serviceMeter(env []string) (calibration.ServiceMeter, error) {
	v := os.Getenv(calibration.EnvServicePIDs)
	if env != nil {
		v = ""
		for _, kv := range env {
			if k, val, ok := strings.Cut(kv, "="); ok && k == calibration.EnvServicePIDs {
				v = val
			}
		}
	}
	pids, err := calibration.ParsePIDs(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", calibration.EnvServicePIDs, err)
	}
	if len(pids) == 0 {
		return nil, nil
	}
	return calibration.ProcessTrees(pids), nil
}

func mkdir(parent, name string) string {
	d := parent + "/" + name
	_ = os.MkdirAll(d, 0o755)
	return d
}
