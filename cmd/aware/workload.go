package main

import (
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aware-autoscaler/aware/workloads/database"
	"github.com/aware-autoscaler/aware/workloads/objstore"
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

func newWorkloadServeCmd() *cobra.Command {
	var cfg server.AppConfig
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
			cfg.S3 = s3Config(cmd, cfg.S3)
			return server.ServeApp(cmd.Context(), cfg, slog.Default())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.AppFile, "app", "", "application spec file (YAML or JSON), e.g. workloads/app/examples/light.yaml")
	f.StringVar(&cfg.Server.Addr, "addr", server.DefaultAddr, "listen address host:port")
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory for file segments (default: a temporary directory removed on exit)")
	f.IntVar(&cfg.Server.GOMAXPROCS, "gomaxprocs", 0, "GOMAXPROCS override; 0 keeps the runtime's choice, which follows the container CPU limit")
	f.IntVar(&cfg.Server.MaxInFlight, "max-inflight", 0, "reject requests with 503 beyond this many in the server, waiting or running (0: unlimited)")
	f.IntVar(&cfg.Server.Concurrency, "concurrency", 0, "run at most this many requests at once; the rest wait in FIFO order (0: unbounded)")
	f.DurationVar(&cfg.Server.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long in-flight requests may drain on shutdown")
	f.DurationVar(&cfg.Server.DrainDelay, "drain-delay", 0, "keep serving this long after turning unready on shutdown")
	f.DurationVar(&cfg.Server.SetupTimeout, "setup-timeout", server.DefaultSetupTimeout, "bound on the app's setup and teardown hooks")
	s3Flags(f, &cfg.S3)
	f.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL URL (default $"+database.EnvURL+")")
	_ = cmd.MarkFlagRequired("app")
	return cmd
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
