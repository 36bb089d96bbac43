package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/database"
	"github.com/aware-autoscaler/aware/workloads/objstore"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// AppConfig is one served application (`aware workload serve`): its spec
// file, a scratch folder, the server's Config (App is taken from the spec)
// and the clients of the services the application uses.
type AppConfig struct {
	AppFile     string          // application spec file (YAML or JSON)
	Dir         string          // scratch folder ("": a temporary one removed on return)
	Server      Config          // the server's settings
	S3          objstore.Config // the object store, if the app uses one
	DatabaseURL string          // PostgreSQL URL ("": $AWARE_DATABASE_URL), if the app uses a database
}

// ServeApp serves the application of cfg.AppFile until ctx is cancelled,
// connecting the object store and the database only if the app uses them.
func ServeApp(ctx context.Context, cfg AppConfig, log *slog.Logger) error {
	spec, err := app.Load(cfg.AppFile)
	if err != nil {
		return err
	}
	cfg.Server.App = spec.Name

	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "aware-workload-"); err != nil {
			return fmt.Errorf("scratch directory: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	env := segments.Env{Dir: dir, Seed: spec.Seed}

	var opts []Option
	closeAll := func() {}
	needObjects, needDB := spec.Needs()
	if needObjects {
		if cfg.S3.Endpoint == "" {
			return fmt.Errorf("app %s (%s) needs an object store: set --s3-endpoint or %s (with the access and secret keys)", spec.Name, cfg.AppFile, objstore.EnvEndpoint)
		}
		if env.Objects, err = objstore.Connect(ctx, cfg.S3); err != nil {
			return fmt.Errorf("app %s: connect object store: %w", spec.Name, err)
		}
	}
	if needDB {
		url := cfg.DatabaseURL
		if url == "" {
			url = database.URLFromEnv()
		}
		if url == "" {
			return fmt.Errorf("app %s (%s) needs a database: set --database-url or %s", spec.Name, cfg.AppFile, database.EnvURL)
		}
		db, err := database.Connect(ctx, url)
		if err != nil {
			return fmt.Errorf("app %s: connect database: %w", spec.Name, err)
		}
		env.DB = db
		closeDB := func() error { db.Close(); return nil }
		closeAll = func() { _ = closeDB() }
		opts = append(opts, WithCloser("database", closeDB))
	}
	opts = append(opts, WithLogger(log))
	srv, err := New(cfg.Server, ChainSetup(spec, env), opts...)
	if err != nil {
		closeAll()
		return err
	}
	return srv.Run(ctx)
}
