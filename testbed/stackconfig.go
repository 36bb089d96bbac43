package testbed

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// Project is the Pulumi project name; stack configuration keys are
// "aware-testbed:<key>".
const Project = "aware-testbed"

// Configuration keys of a stack (Pulumi.<stack>.yaml, `pulumi config set`).
const (
	KeyTarget        = "target"        // one of Targets
	KeyKubeconfig    = "kubeconfig"    // path of the cluster's kubeconfig
	KeyContext       = "context"       // its context ("" is the current one)
	KeyApps          = "apps"          // applications of the pool (default 1000)
	KeyPoolSeed      = "poolSeed"      // the generator's seed (default 1)
	KeySelectSeed    = "selectSeed"    // which apps of the pool (default 0: the first ones)
	KeyTrace         = "trace"         // what the load generators replay (default synthetic)
	KeyLoadScale     = "loadScale"     // multiplies each app's mean rate (default 1)
	KeyLoadDuration  = "loadDuration"  // length of the replay (default 24h)
	KeyStep          = "step"          // the controller's step (default 15s)
	KeyAgents        = "agents"        // deploy the agent runner (default true)
	KeyWebhook       = "webhook"       // serve the admission webhook (default true)
	KeyComponents    = "components"    // object: controller, monitoring, trajectoryDB, externalServices, load, dashboards
	KeyImages        = "images"        // object: aware, prometheus, kubeStateMetrics, ...
	KeyStorageClass  = "storageClass"  // of the databases' volumes ("" is the default class)
	KeyInfluxStorage = "influxStorage" // InfluxDB's volume (default 10Gi)
	KeyCredentials   = "credentials"   // secret object: objectStoreAccessKey, objectStoreSecretKey, postgresPassword
	KeyUpdateMode    = "updateMode"    // the apps' MPAs: InPlaceOrRecreate (default), Recreate, Initial, Off
	KeyKind          = "kind"          // object: nodeImage, workers
	KeyGKE           = "gke"           // object: project, location, machineType, nodes, diskGB
	KeyTimeScale     = "timeScale"     // local target: simulated seconds per wall second (default 10)
)

// StackProgram is the testbed program of both `aware testbed` (Automation
// API) and `pulumi up` in testbed (program/): it reads the stack's
// configuration and deploys it.
func StackProgram(ctx *pulumi.Context) error {
	cfg, err := ConfigFromStack(ctx)
	if err != nil {
		return err
	}
	_, err = Deploy(ctx, cfg)
	return err
}

// ConfigFromStack reads the stack configuration, defaulting what is unset
// from DefaultConfig; malformed values are errors naming their key.
func ConfigFromStack(ctx *pulumi.Context) (Config, error) {
	c := config.New(ctx, Project)
	cfg := DefaultConfig()
	errf := func(key string, err error) error {
		return fmt.Errorf("testbed: stack config %s:%s: %w", Project, key, err)
	}
	if v := c.Get(KeyTarget); v != "" {
		cfg.Target = Target(v)
	}
	cfg.Kubeconfig, cfg.Context = c.Get(KeyKubeconfig), c.Get(KeyContext)
	ints := []struct {
		key string
		set func(int64)
	}{
		{KeyApps, func(v int64) { cfg.Apps = int(v) }},
		{KeyPoolSeed, func(v int64) { cfg.PoolSeed = v }},
		{KeySelectSeed, func(v int64) { cfg.SelectSeed = uint64(v) }},
	}
	for _, i := range ints {
		if v := c.Get(i.key); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return cfg, errf(i.key, err)
			}
			i.set(n)
		}
	}
	o := &cfg.Options
	if v := c.Get(KeyTrace); v != "" {
		o.Trace = v
	}
	for _, f := range []struct {
		key string
		to  *float64
	}{{KeyLoadScale, &o.LoadScale}, {KeyTimeScale, &cfg.TimeScale}} {
		if v := c.Get(f.key); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return cfg, errf(f.key, err)
			}
			*f.to = x
		}
	}
	for _, d := range []struct {
		key string
		to  *time.Duration
	}{{KeyLoadDuration, &o.LoadDuration}, {KeyStep, &o.Step}} {
		if v := c.Get(d.key); v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil {
				return cfg, errf(d.key, err)
			}
			*d.to = dur
		}
	}
	for _, b := range []struct {
		key string
		to  *bool
	}{{KeyAgents, &o.Agents}, {KeyWebhook, &o.Webhook}} {
		if v := c.Get(b.key); v != "" {
			x, err := strconv.ParseBool(v)
			if err != nil {
				return cfg, errf(b.key, err)
			}
			*b.to = x
		}
	}
	for _, obj := range []struct {
		key string
		to  any
	}{{KeyComponents, &o.Components}, {KeyImages, &o.Images}, {KeyCredentials, &cfg.Credentials}, {KeyKind, &cfg.Kind}, {KeyGKE, &cfg.GKE}} {
		if v := c.Get(obj.key); v != "" {
			if err := strictJSON(v, obj.to); err != nil {
				return cfg, errf(obj.key, err)
			}
		}
	}
	o.StorageClass = c.Get(KeyStorageClass)
	if v := c.Get(KeyUpdateMode); v != "" {
		o.AppOptions.UpdateMode = v1alpha1.UpdateMode(v)
	}
	if v := c.Get(KeyInfluxStorage); v != "" {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return cfg, errf(KeyInfluxStorage, err)
		}
		o.InfluxStorage = q
	}
	return cfg, nil
}

// StackConfig is cfg as stack configuration: what ConfigFromStack reads
// back as cfg. Credentials are a secret.
func (cfg Config) StackConfig() (auto.ConfigMap, error) {
	o := cfg.Options
	m := auto.ConfigMap{}
	set := func(key, v string) { m[Project+":"+key] = auto.ConfigValue{Value: v} }
	set(KeyTarget, string(cfg.Target))
	set(KeyKubeconfig, cfg.Kubeconfig)
	set(KeyContext, cfg.Context)
	set(KeyApps, strconv.Itoa(cfg.Apps))
	set(KeyPoolSeed, strconv.FormatInt(cfg.PoolSeed, 10))
	set(KeySelectSeed, strconv.FormatUint(cfg.SelectSeed, 10))
	set(KeyTrace, o.Trace)
	set(KeyLoadScale, strconv.FormatFloat(o.LoadScale, 'g', -1, 64))
	set(KeyLoadDuration, o.LoadDuration.String())
	set(KeyStep, o.Step.String())
	set(KeyAgents, strconv.FormatBool(o.Agents))
	set(KeyWebhook, strconv.FormatBool(o.Webhook))
	set(KeyStorageClass, o.StorageClass)
	set(KeyInfluxStorage, o.InfluxStorage.String())
	set(KeyUpdateMode, string(o.AppOptions.UpdateMode))
	set(KeyTimeScale, strconv.FormatFloat(cfg.TimeScale, 'g', -1, 64))
	for key, v := range map[string]any{KeyComponents: o.Components, KeyImages: o.Images, KeyCredentials: cfg.Credentials, KeyKind: cfg.Kind, KeyGKE: cfg.GKE} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		m[Project+":"+key] = auto.ConfigValue{Value: string(b), Secret: key == KeyCredentials}
	}
	return m, nil
}

func strictJSON(s string, to any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	return dec.Decode(to)
}
