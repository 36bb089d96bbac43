package generator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/database"
	"github.com/aware-autoscaler/aware/workloads/objstore"
)

// Image defaults.
const (
	ImageRepository = "ghcr.io/aware-autoscaler/aware"
	DefaultImageTag = "0.1.0"
	// DefaultRecommender is the MPA recommender of generated apps; "default"
	// leaves the MPA to the default (HPA + VPA) recommender.
	DefaultRecommender = "aware"
)

// Names and paths inside the generated objects.
const (
	containerName = "workload"
	httpPort      = 8080
	appMountDir   = "/etc/aware"
	appFileName   = "app.yaml"
	labelName     = "app.kubernetes.io/name"
	labelPartOf   = "app.kubernetes.io/part-of"
	labelSplit    = "aware.dev/split"
	labelNode     = "aware.dev/node-class"
	// nonRootUID is the distroless "nonroot" user.
	nonRootUID = 65532
)

// ManifestOptions configure the rendered objects. Zero fields take the
// values of DefaultManifestOptions.
type ManifestOptions struct {
	// Image is the workload server image.
	Image string
	// Namespace of every object; empty leaves it to kubectl's context.
	Namespace string
	// UpdateMode of the MPA.
	UpdateMode v1alpha1.UpdateMode
	// Recommender of the MPA; "default" means the default recommender.
	Recommender string
	// Bounds are the MPA's constraints and resource policy.
	Bounds gym.Bounds
	// ObjectStoreEndpoint is the S3 endpoint of apps with object segments;
	// ObjectStoreSecret holds its "access-key" and "secret-key".
	ObjectStoreEndpoint string
	ObjectStoreSecret   string
	// DatabaseSecret holds the PostgreSQL URL ("url") of apps with database
	// segments.
	DatabaseSecret string
	// NodeArch maps a node class to the kubernetes.io/arch node label.
	NodeArch map[string]string
}

// DefaultManifestOptions are the defaults of ManifestOptions.
func DefaultManifestOptions() ManifestOptions {
	return ManifestOptions{
		Image:               ImageRepository + ":" + DefaultImageTag,
		UpdateMode:          v1alpha1.UpdateModeInPlaceOrRecreate,
		Recommender:         DefaultRecommender,
		Bounds:              gym.DefaultBounds(),
		ObjectStoreEndpoint: "http://aware-objstore:7070",
		ObjectStoreSecret:   "aware-objstore",
		DatabaseSecret:      "aware-database",
		NodeArch:            map[string]string{NodeX86: "amd64", NodePower: "ppc64le"},
	}
}

func (o ManifestOptions) withDefaults() ManifestOptions {
	d := DefaultManifestOptions()
	set := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	set(&o.Image, d.Image)
	set((*string)(&o.UpdateMode), string(d.UpdateMode))
	set(&o.Recommender, d.Recommender)
	set(&o.ObjectStoreEndpoint, d.ObjectStoreEndpoint)
	set(&o.ObjectStoreSecret, d.ObjectStoreSecret)
	set(&o.DatabaseSecret, d.DatabaseSecret)
	if o.Bounds == (gym.Bounds{}) {
		o.Bounds = d.Bounds
	}
	if o.NodeArch == nil {
		o.NodeArch = d.NodeArch
	}
	return o
}

// Objects are the Kubernetes objects of one application.
type Objects struct {
	AppConfig  *corev1.ConfigMap
	Deployment *appsv1.Deployment
	Service    *corev1.Service
	MPA        *v1alpha1.MultidimPodAutoscaler
}

// Build returns the objects of a: the app spec ConfigMap, the Deployment
// running the workload server, its Service and the MultidimPodAutoscaler
// that scales it, which carries the app's agent profile (spec.agent).
func Build(a App, opts ManifestOptions) (Objects, error) {
	if err := a.Validate(); err != nil {
		return Objects{}, fmt.Errorf("manifests: %w", err)
	}
	o := opts.withDefaults()
	if err := o.Bounds.Validate(); err != nil {
		return Objects{}, fmt.Errorf("manifests: %w", err)
	}
	arch, ok := o.NodeArch[a.Env.NodeClass]
	if !ok {
		return Objects{}, fmt.Errorf("manifests: %s: no node architecture for node class %q", a.Name(), a.Env.NodeClass)
	}
	spec, err := yaml.Marshal(a.Spec)
	if err != nil {
		return Objects{}, fmt.Errorf("manifests: %s: %w", a.Name(), err)
	}
	name := a.Name()
	meta := func(n string, kind string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: n, Namespace: o.Namespace, Labels: labels(a, kind)}
	}
	sum := sha256.Sum256(spec)

	appCM := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(name+"-app", "app-spec"),
		Data:       map[string]string{appFileName: string(spec)},
	}

	selector := map[string]string{labelName: name, labelPartOf: "aware"}
	podLabels := labels(a, "workload")
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(math.Round(a.Initial.CPU*1000)), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(math.Round(a.Initial.Memory)), resource.BinarySI),
	}
	probe := func(path string, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http")}},
			PeriodSeconds:    period,
			TimeoutSeconds:   2,
			FailureThreshold: 3,
		}
	}
	replicas := int32(a.Initial.Replicas)
	container := corev1.Container{
		Name:  containerName,
		Image: o.Image,
		Args: []string{"workload", "serve", "--app", appMountDir + "/" + appFileName,
			"--addr", ":" + strconv.Itoa(httpPort), "--concurrency", strconv.Itoa(a.Concurrency)},
		Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: httpPort, Protocol: corev1.ProtocolTCP}},
		Env:       serviceEnv(a, o),
		Resources: corev1.ResourceRequirements{Requests: resources, Limits: resources.DeepCopy()},
		ResizePolicy: []corev1.ContainerResizePolicy{
			{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
			{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "app", MountPath: appMountDir, ReadOnly: true},
			{Name: "scratch", MountPath: "/tmp"},
		},
		ReadinessProbe: probe("/readyz", 5),
		LivenessProbe:  probe("/healthz", 10),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr(true),
			RunAsUser:                ptr(int64(nonRootUID)),
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	scratch := resource.MustParse("64Mi")
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(name, "workload"),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// Keep serving capacity while pods roll: surge one, never go below.
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr(intstr.FromInt32(0)),
					MaxSurge:       ptr(intstr.FromInt32(1)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: podLabels,
					Annotations: map[string]string{
						"prometheus.io/scrape":  "true",
						"prometheus.io/port":    strconv.Itoa(httpPort),
						"prometheus.io/path":    "/metrics",
						"aware.dev/spec-sha256": hex.EncodeToString(sum[:8]),
					},
				},
				Spec: corev1.PodSpec{
					Containers:   []corev1.Container{container},
					NodeSelector: map[string]string{corev1.LabelArchStable: arch},
					Volumes: []corev1.Volume{
						{Name: "app", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: appCM.Name},
						}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &scratch}}},
					},
				},
			},
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(name, "workload"),
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}

	mpa := &v1alpha1.MultidimPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MultidimPodAutoscaler"},
		ObjectMeta: meta(name, "autoscaler"),
		Spec:       mpaSpec(a, o),
	}
	return Objects{AppConfig: appCM, Deployment: deploy, Service: svc, MPA: mpa}, nil
}

func mpaSpec(a App, o ManifestOptions) v1alpha1.MultidimPodAutoscalerSpec {
	b := o.Bounds
	mode := o.UpdateMode
	auto := v1alpha1.ContainerScalingModeAuto
	utilisation := func(r corev1.ResourceName, target float64) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: r, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(math.Round(target * 100))),
			}},
		}
	}
	spec := v1alpha1.MultidimPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: a.Name()},
		UpdatePolicy:   &v1alpha1.PodUpdatePolicy{UpdateMode: &mode},
		Metrics: []autoscalingv2.MetricSpec{
			utilisation(corev1.ResourceCPU, a.Profile.Targets.CPU),
			utilisation(corev1.ResourceMemory, a.Profile.Targets.Memory),
		},
		Constraints: &v1alpha1.ScalingConstraints{MinReplicas: ptr(int32(b.MinReplicas)), MaxReplicas: int32(b.MaxReplicas)},
		ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
			ContainerName:       containerName,
			Mode:                &auto,
			MinAllowed:          resourceList(math.Max(b.MinCPU, a.MinCPU), b.MinMemory),
			MaxAllowed:          resourceList(b.MaxCPU, b.MaxMemory),
			ControlledResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		}}},
	}
	prof := a.Profile
	spec.Agent = &prof
	if o.Recommender != v1alpha1.DefaultRecommenderName {
		spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: o.Recommender}}
	}
	return spec
}

func resourceList(cpu, memory float64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(math.Round(cpu*1000)), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(math.Round(memory)), resource.BinarySI),
	}
}

func labels(a App, component string) map[string]string {
	return map[string]string{
		labelName:                      a.Name(),
		labelPartOf:                    "aware",
		"app.kubernetes.io/component":  component,
		"app.kubernetes.io/managed-by": "aware-generate",
		labelSplit:                     a.Split,
		labelNode:                      a.Env.NodeClass,
	}
}

// serviceEnv connects the workload server to the services its chain needs.
func serviceEnv(a App, o ManifestOptions) []corev1.EnvVar {
	objects, db := a.Spec.Needs()
	secret := func(env, name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key,
		}}}
	}
	var env []corev1.EnvVar
	if objects {
		env = append(env,
			corev1.EnvVar{Name: objstore.EnvEndpoint, Value: o.ObjectStoreEndpoint},
			secret(objstore.EnvAccessKey, o.ObjectStoreSecret, "access-key"),
			secret(objstore.EnvSecretKey, o.ObjectStoreSecret, "secret-key"),
		)
	}
	if db {
		env = append(env, secret(database.EnvURL, o.DatabaseSecret, "url"))
	}
	return env
}

// Manifest renders the objects of a as one multi-document YAML: the app
// ConfigMap, the profile ConfigMap, the Deployment, the Service and the
// MPA, separated by "---". Empty status fields are left out.
func Manifest(a App, opts ManifestOptions) ([]byte, error) {
	objs, err := Build(a, opts)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for i, obj := range []any{objs.AppConfig, objs.Deployment, objs.Service, objs.MPA} {
		data, err := toYAML(obj)
		if err != nil {
			return nil, fmt.Errorf("manifests: %s: %w", a.Name(), err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// toYAML serialises obj without its empty "status".
func toYAML(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if empty(m["status"]) {
		delete(m, "status")
	}
	return yaml.Marshal(m)
}

// empty reports whether v is a map of nothing but empty maps.
func empty(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, x := range m {
		if !empty(x) {
			return false
		}
	}
	return true
}

// WriteManifests writes the manifest of every app to
// dir/manifests/<name>.yaml.
func WriteManifests(dir string, apps []App, opts ManifestOptions) error {
	out := filepath.Join(dir, ManifestsDir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("write manifests: %w", err)
	}
	var errs []error
	for _, a := range apps {
		data, err := Manifest(a, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.WriteFile(filepath.Join(out, a.Name()+".yaml"), data, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("write manifests: %w", err))
		}
	}
	return errors.Join(errs...)
}

func ptr[T any](v T) *T { return &v }
