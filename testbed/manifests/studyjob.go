package manifests

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/workloads/objstore"
)

// The study Job's names and sizes.
const (
	// ComponentStudy is the app.kubernetes.io/component label of the
	// study Job's objects.
	ComponentStudy = "study"
	// StudyName is the study Job's default name, its ServiceAccount's and
	// its objects' app.kubernetes.io/name.
	StudyName = "aware-study"
	// StudyQuick and StudyFull are the sizes of `aware study --quick|--full`.
	StudyQuick = "quick"
	StudyFull  = "full"
	// MaxStudyShards bounds StudyJobSpec.Shards.
	MaxStudyShards = 1000
	// StudyIndexEnv is the variable Kubernetes sets in an Indexed Job's
	// pods to their 0-based completion index.
	StudyIndexEnv = "JOB_COMPLETION_INDEX"
	// StudyOutDir is where each pod's `aware study` writes (an emptyDir).
	StudyOutDir = "/out"
	// StudyResultsPrefix is the folder of the object store's bucket
	// "aware" where a Job keeps its shards' results by default (under the
	// Job's name).
	StudyResultsPrefix = "s3://" + objstore.DefaultBucket + "/studies/"
	// studyGracePeriod lets a pod told to stop push what it has (aware
	// study bounds its last push at 2 minutes).
	studyGracePeriod = 150
)

// resultsURL is an s3://BUCKET/PREFIX folder whose prefix's segments are
// names (not "." or "..", no backslash or NUL): what aware study's
// --results takes (evaluation/study/mirror.ParseURL, which this package
// may not import).
var resultsURL = regexp.MustCompile(`^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^/\\\x00]+)*/?$`)

func validResults(u string) bool {
	if !resultsURL.MatchString(u) {
		return false
	}
	for _, seg := range strings.Split(strings.TrimPrefix(u, "s3://"), "/")[1:] {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// StudyJobSpec says which studies the study Job runs, at what size, on
// how many shards.
type StudyJobSpec struct {
	// Name of the Job ("" is StudyName); pods are named after it and their
	// index, so it is shorter than a DNS label by the index's digits.
	Name string
	// Studies are the names `aware study` takes (its suite's registry
	// checks them: this package may not import the studies).
	Studies []string
	// Size is StudyQuick or StudyFull.
	Size string
	// Shards is how many pods share every study's cells (1..MaxStudyShards),
	// one per completion index.
	Shards int
	// Parallelism caps the pods running at once (0: all Shards).
	Parallelism int
	// Results is the object store's folder s3://BUCKET/PREFIX where each
	// shard keeps its output, under shard-I-of-N ("":
	// StudyResultsPrefix + Name); `aware study merge STUDY Results` puts
	// them together.
	Results string
}

// validate reports every problem in s, each naming its field.
func (s StudyJobSpec) validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(s.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", s.Name, msgs[0]))
	} else if s.Shards >= 1 {
		// The Job controller names each pod's host <name>-<index>.
		if limit := validation.DNS1123LabelMaxLength - 1 - len(strconv.Itoa(s.Shards-1)); len(s.Name) > limit {
			errs = append(errs, fmt.Errorf("name %q: at most %d characters with %d shards (pods' hostnames are <name>-<index>)", s.Name, limit, s.Shards))
		}
	}
	if len(s.Studies) == 0 {
		errs = append(errs, errors.New("studies: none named"))
	}
	seen := map[string]bool{}
	for i, name := range s.Studies {
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("studies[%d] %q: %s", i, name, msgs[0]))
		}
		if seen[name] {
			errs = append(errs, fmt.Errorf("studies[%d] %q: named twice", i, name))
		}
		seen[name] = true
	}
	if s.Size != StudyQuick && s.Size != StudyFull {
		errs = append(errs, fmt.Errorf("size %q: want %s or %s", s.Size, StudyQuick, StudyFull))
	}
	if s.Shards < 1 || s.Shards > MaxStudyShards {
		errs = append(errs, fmt.Errorf("shards %d: want 1 to %d", s.Shards, MaxStudyShards))
	}
	if s.Parallelism < 0 {
		errs = append(errs, fmt.Errorf("parallelism %d: must not be negative", s.Parallelism))
	}
	if !validResults(s.Results) {
		errs = append(errs, fmt.Errorf("results %q: want s3://BUCKET/PREFIX (a bucket name of 3-63 lower-case letters, digits, dots and hyphens; the prefix's segments names, not . or .., without backslash)", s.Results))
	}
	return errors.Join(errs...)
}

// StudyJob returns a ServiceAccount and an Indexed Job in o.Namespace that
// run `aware study <studies> --<size>` sharded on the cluster: completion
// index k (0-based) runs shard k+1 of s.Shards, so the Job's pods together
// run every cell of every study once; put their output folders together
// with `aware study merge STUDY s3://…` from the object store. The pods
// run the project's image without a shell (it has none):
// `--shard-index-env JOB_COMPLETION_INDEX --shards n` has the binary read
// its index from the variable the Job controller sets. Each pod writes to
// an emptyDir at StudyOutDir, which `--results` keeps in the testbed's
// object store (AWARE_S3_ENDPOINT, AWARE_S3_ACCESS_KEY,
// AWARE_S3_SECRET_KEY) under s.Results/shard-I-of-N as it runs: a pod
// retried after a failure resumes from it. o must have been through
// WithDefaults and have the external services on (their Secret holds the
// store's keys).
func StudyJob(o Options, s StudyJobSpec) ([]client.Object, error) {
	if s.Name == "" {
		s.Name = StudyName
	}
	if s.Results == "" {
		s.Results = StudyResultsPrefix + s.Name
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("manifests: study job: %w", err)
	}
	if !o.Components.ExternalServices {
		return nil, errors.New("manifests: study job: components.externalServices is off: the Job's pods take the object store's endpoint and keys from its Secret")
	}
	ns := o.Namespace
	n := int32(s.Shards)
	parallelism := n
	if s.Parallelism > 0 {
		parallelism = min(parallelism, int32(s.Parallelism))
	}
	args := append([]string{"study"}, s.Studies...)
	args = append(args, "--"+s.Size,
		"--shard-index-env="+StudyIndexEnv,
		"--shards="+strconv.Itoa(s.Shards),
		// One cell at a time: the pod asks for one CPU, and GOMAXPROCS
		// (the default) would be the node's.
		"--workers=1",
		"--out="+StudyOutDir,
		"--results="+strings.TrimSuffix(s.Results, "/"),
	)
	secret := func(env, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ObjectStoreName}, Key: key}}}
	}
	const container = "study"
	sa := serviceAccount(StudyName, ns, ComponentStudy)
	sa.Labels = studyLabels()
	sa.AutomountServiceAccountToken = ptr(false)
	job := &batchv1.Job{TypeMeta: typeMeta("batch/v1", "Job"), ObjectMeta: objectMeta(s.Name, ns, ComponentStudy),
		Spec: batchv1.JobSpec{
			CompletionMode:       ptr(batchv1.IndexedCompletion),
			Completions:          ptr(n),
			Parallelism:          ptr(parallelism),
			BackoffLimitPerIndex: ptr(int32(1)),
			// A replacement pod starts once the one it replaces has failed,
			// not while that one is still pushing its results in its grace
			// period: it pulls them, and resumes from them.
			PodReplacementPolicy: ptr(batchv1.Failed),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr(int64(studyGracePeriod)),
					ServiceAccountName:            StudyName,
					AutomountServiceAccountToken:  ptr(false),
					Containers: []corev1.Container{{
						Name: container, Image: o.Images.Aware, Args: args,
						Env: []corev1.EnvVar{
							goMemLimit(container),
							{Name: objstore.EnvEndpoint, Value: o.AppOptions.ObjectStoreEndpoint},
							secret(objstore.EnvAccessKey, "access-key"),
							secret(objstore.EnvSecretKey, "secret-key"),
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
						},
						SecurityContext: nonRoot(),
						// The image's root is read-only; its HOME and working
						// directory are /tmp.
						VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: StudyOutDir}, {Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{emptyDir("out"), emptyDir("tmp")},
				},
			},
		}}
	job.Labels = studyLabels()
	job.Spec.Template.Labels = studyLabels()
	return []client.Object{sa, job}, nil
}

// studyLabels are the study Job's objects' labels: the study is the
// project's (part-of aware), not the testbed's.
func studyLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       StudyName,
		"app.kubernetes.io/part-of":    "aware",
		"app.kubernetes.io/component":  ComponentStudy,
		"app.kubernetes.io/managed-by": "aware-testbed",
	}
}
