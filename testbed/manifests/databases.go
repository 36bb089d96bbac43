package manifests

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Credentials are the external services' secrets. The driver generates
// them once per stack and keeps them as Pulumi secrets; they are never
// defaulted.
type Credentials struct {
	ObjectStoreAccessKey string `json:"objectStoreAccessKey"`
	ObjectStoreSecretKey string `json:"objectStoreSecretKey"`
	PostgresPassword     string `json:"postgresPassword"`
}

// Validate checks that every credential is set.
func (c Credentials) Validate() error {
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"objectStoreAccessKey", c.ObjectStoreAccessKey}, {"objectStoreSecretKey", c.ObjectStoreSecretKey},
		{"postgresPassword", c.PostgresPassword},
	} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("credentials: %s is empty", f.name))
		}
	}
	return errors.Join(errs...)
}

// TrajectoryDB returns InfluxDB 1.8 as a StatefulSet with a volume claim,
// and its Service: the controller's trajectory store (database "aware").
func TrajectoryDB(o Options) []client.Object {
	ns := o.Namespace
	sts := statefulSet(InfluxDBName, ns, ComponentTrajectoryDB, corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "influxdb", Image: o.Images.InfluxDB,
			Env: []corev1.EnvVar{{Name: "INFLUXDB_DB", Value: "aware"}, {Name: "INFLUXDB_REPORTING_DISABLED", Value: "true"},
				{Name: "INFLUXDB_DATA_INDEX_VERSION", Value: "tsi1"}},
			Ports:          []corev1.ContainerPort{containerPort("http", InfluxDBPort)},
			Resources:      resources("500m", "1Gi"),
			ReadinessProbe: httpProbe("/ping", InfluxDBPort),
			VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/influxdb"}},
		}},
	}, "data", o.InfluxStorage, o.StorageClass)
	return []client.Object{sts, service(InfluxDBName, ns, ComponentTrajectoryDB, port("http", InfluxDBPort))}
}

// ExternalServices returns the S3-compatible object store (versitygw on a
// POSIX volume) and PostgreSQL that the object and database segments use,
// with the Secrets the apps read (in o.AppsNamespace, under the names the
// generator's manifests refer to).
func ExternalServices(o Options, c Credentials) ([]client.Object, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	ns := o.Namespace
	storeSecret := &corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: objectMeta(ObjectStoreName, ns, ComponentExternalServices),
		StringData: map[string]string{"access-key": c.ObjectStoreAccessKey, "secret-key": c.ObjectStoreSecretKey}}
	env := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ObjectStoreName}, Key: key}}}
	}
	store := statefulSet(ObjectStoreName, ns, ComponentExternalServices, corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "versitygw", Image: o.Images.ObjectStore,
			Args:         []string{"--port", ":" + strconv.Itoa(ObjectStorePort), "--region", "us-east-1", "--quiet", "posix", "/data"},
			Env:          []corev1.EnvVar{env("ROOT_ACCESS_KEY", "access-key"), env("ROOT_SECRET_KEY", "secret-key")},
			Ports:        []corev1.ContainerPort{containerPort("s3", ObjectStorePort)},
			Resources:    resources("500m", "512Mi"),
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}},
	}, "data", o.ServiceStorage, o.StorageClass)
	pgSecret := &corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: objectMeta(PostgresName, ns, ComponentExternalServices),
		StringData: map[string]string{"password": c.PostgresPassword}}
	pg := statefulSet(PostgresName, ns, ComponentExternalServices, corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "postgres", Image: o.Images.Postgres,
			Env: []corev1.EnvVar{{Name: "POSTGRES_USER", Value: "aware"}, {Name: "POSTGRES_DB", Value: "aware"},
				{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"},
				{Name: "POSTGRES_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: PostgresName}, Key: "password"}}}},
			Ports:          []corev1.ContainerPort{containerPort("postgres", PostgresPort)},
			Resources:      resources("500m", "1Gi"),
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-U", "aware"}}}, PeriodSeconds: 10},
			VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql/data"}},
		}},
	}, "data", o.ServiceStorage, o.StorageClass)
	// The apps' copies, under the generator's names.
	dbURL := (&url.URL{Scheme: "postgres", User: url.UserPassword("aware", c.PostgresPassword),
		Host: fmt.Sprintf("%s.%s:%d", PostgresName, ns, PostgresPort), Path: "/aware", RawQuery: "sslmode=disable"}).String()
	appStore := &corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: objectMeta(o.AppOptions.ObjectStoreSecret, o.AppsNamespace, ComponentExternalServices),
		StringData: map[string]string{"access-key": c.ObjectStoreAccessKey, "secret-key": c.ObjectStoreSecretKey}}
	appDB := &corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: objectMeta(o.AppOptions.DatabaseSecret, o.AppsNamespace, ComponentExternalServices),
		StringData: map[string]string{"url": dbURL}}
	return []client.Object{
		storeSecret, store, service(ObjectStoreName, ns, ComponentExternalServices, port("s3", ObjectStorePort)),
		pgSecret, pg, service(PostgresName, ns, ComponentExternalServices, port("postgres", PostgresPort)),
		appStore, appDB,
	}, nil
}
