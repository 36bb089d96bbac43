package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/database"
	"github.com/aware-autoscaler/aware/workloads/objstore"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/server"
)

// newWorkloadCmd is `aware workload`: serve and calibrate applications.
func newWorkloadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Serve a workload application over HTTP, or calibrate the segments",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newWorkloadServeCmd(), newCalibrateCmd(), newDemoCmd())
	return cmd
}

// serveFlags are the flags of `aware workload serve`.
type serveFlags struct {
	appFile string
	dir     string
	cfg     server.Config
	s3      objstore.Config
	dbURL   string
}

func newWorkloadServeCmd() *cobra.Command {
	var fl serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve one application: /invoke, /healthz, /readyz, /metrics",
		Long: `Serves the application of --app over HTTP. POST or GET /invoke runs its chain of
segments once; /healthz is liveness, /readyz readiness (after the app's setup hooks), and
/metrics Prometheus metrics. The object store and database are connected only if the app
uses them, from the --s3-* and --database-url flags or AWARE_S3_* and AWARE_DATABASE_URL.
SIGINT/SIGTERM shut down gracefully: not ready, drain, tear the app down, close clients.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd, fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.appFile, "app", "", "application spec file (YAML or JSON), e.g. workloads/app/examples/light.yaml")
	f.StringVar(&fl.cfg.Addr, "addr", server.DefaultAddr, "listen address host:port")
	f.StringVar(&fl.dir, "dir", "", "scratch directory for file segments (default: a temporary directory removed on exit)")
	f.IntVar(&fl.cfg.GOMAXPROCS, "gomaxprocs", 0, "GOMAXPROCS override; 0 keeps the runtime's choice, which follows the container CPU limit")
	f.IntVar(&fl.cfg.MaxInFlight, "max-inflight", 0, "reject requests with 503 beyond this many in the server, waiting or running (0: unlimited)")
	f.IntVar(&fl.cfg.Concurrency, "concurrency", 0, "run at most this many requests at once; the rest wait in FIFO order (0: unbounded)")
	f.DurationVar(&fl.cfg.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long in-flight requests may drain on shutdown")
	f.DurationVar(&fl.cfg.DrainDelay, "drain-delay", 0, "keep serving this long after turning unready on shutdown")
	f.DurationVar(&fl.cfg.SetupTimeout, "setup-timeout", server.DefaultSetupTimeout, "bound on the app's setup and teardown hooks")
	s3Flags(f, &fl.s3)
	f.StringVar(&fl.dbURL, "database-url", "", "PostgreSQL URL (default $"+database.EnvURL+")")
	_ = cmd.MarkFlagRequired("app")
	return cmd
}

func runServe(cmd *cobra.Command, fl serveFlags) error {
	ctx := cmd.Context()
	spec, err := app.Load(fl.appFile)
	if err != nil {
		return err
	}
	fl.cfg.App = spec.Name

	dir := fl.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "aware-workload-"); err != nil {
			return fmt.Errorf("scratch directory: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	env := segments.Env{Dir: dir, Seed: spec.Seed}

	var opts []server.Option
	closeAll := func() {}
	needObjects, needDB := spec.Needs()
	if needObjects {
		cfg := s3Config(cmd, fl.s3)
		if cfg.Endpoint == "" {
			return fmt.Errorf("app %s (%s) needs an object store: set --s3-endpoint or %s (with the access and secret keys)", spec.Name, fl.appFile, objstore.EnvEndpoint)
		}
		if env.Objects, err = objstore.Connect(ctx, cfg); err != nil {
			return fmt.Errorf("app %s: connect object store: %w", spec.Name, err)
		}
	}
	if needDB {
		url := fl.dbURL
		if url == "" {
			url = database.URLFromEnv()
		}
		if url == "" {
			return fmt.Errorf("app %s (%s) needs a database: set --database-url or %s", spec.Name, fl.appFile, database.EnvURL)
		}
		db, err := database.Connect(ctx, url)
		if err != nil {
			return fmt.Errorf("app %s: connect database: %w", spec.Name, err)
		}
		env.DB = db
		closeDB := func() error { db.Close(); return nil }
		closeAll = func() { _ = closeDB() }
		opts = append(opts, server.WithCloser("database", closeDB))
	}
	opts = append(opts, server.WithLogger(slog.Default()))
	srv, err := server.New(fl.cfg, server.ChainSetup(spec, env), opts...)
	if err != nil {
		closeAll()
		return err
	}
	return srv.Run(ctx)
}

// s3Flags registers the --s3-* flags that s3Config reads.
func s3Flags(f *pflag.FlagSet, c *objstore.Config) {
	f.StringVar(&c.Endpoint, "s3-endpoint", "", "object store endpoint host:port or URL (default $"+objstore.EnvEndpoint+")")
	f.StringVar(&c.AccessKey, "s3-access-key", "", "object store access key (default $"+objstore.EnvAccessKey+")")
	f.StringVar(&c.SecretKey, "s3-secret-key", "", "object store secret key (default $"+objstore.EnvSecretKey+")")
	f.StringVar(&c.Bucket, "s3-bucket", "", "object store bucket (default $"+objstore.EnvBucket+" or "+objstore.DefaultBucket+")")
}

// s3Config is the object store configuration: environment defaults
// overridden by the flags the user set.
func s3Config(cmd *cobra.Command, flags objstore.Config) objstore.Config {
	cfg := objstore.ConfigFromEnv()
	set := func(name string, dst *string, v string) {
		if cmd.Flags().Changed(name) {
			*dst = v
		}
	}
	set("s3-endpoint", &cfg.Endpoint, flags.Endpoint)
	set("s3-access-key", &cfg.AccessKey, flags.AccessKey)
	set("s3-secret-key", &cfg.SecretKey, flags.SecretKey)
	set("s3-bucket", &cfg.Bucket, flags.Bucket)
	return cfg
}
