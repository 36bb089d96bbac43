package manifests_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// goldenStudyJob is the spec of testdata/studyjob.golden.
func goldenStudyJob() manifests.StudyJobSpec {
	return manifests.StudyJobSpec{Studies: []string{"bootstrapping", "serving"}, Size: manifests.StudyFull, Shards: 4}
}

func studyOptions(t *testing.T) manifests.Options {
	t.Helper()
	o, err := manifests.DefaultOptions().WithDefaults()
	require.NoError(t, err)
	return o
}

func TestStudyJobGolden(t *testing.T) {
	objs, err := manifests.StudyJob(studyOptions(t), goldenStudyJob())
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, manifests.WriteYAML(&buf, []manifests.Set{{Component: manifests.ComponentStudy, Objects: objs}}))
	golden := filepath.Join("testdata", "studyjob.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), buf.String())
}

func TestStudyJobObjects(t *testing.T) {
	for _, tc := range []struct {
		name              string
		spec              manifests.StudyJobSpec
		jobName           string
		parallelism       int32
		completions       int32
		args, notInArgs   []string
		wantSize, notSize string
	}{
		{"full on 4", goldenStudyJob(), "aware-study", 4, 4,
			[]string{"study", "bootstrapping", "serving", "--full", "--shard-index-env=JOB_COMPLETION_INDEX", "--shards=4", "--workers=1", "--out=/out", "--results=s3://aware/studies/aware-study"}, nil, "--full", "--quick"},
		{"parallelism caps", manifests.StudyJobSpec{Name: "serving-quick", Studies: []string{"serving"}, Size: manifests.StudyQuick, Shards: 10, Parallelism: 3},
			"serving-quick", 3, 10, []string{"study", "serving", "--quick", "--shard-index-env=JOB_COMPLETION_INDEX", "--shards=10", "--workers=1", "--out=/out", "--results=s3://aware/studies/serving-quick"}, nil, "--quick", "--full"},
		{"parallelism above shards", manifests.StudyJobSpec{Studies: []string{"adaptation"}, Size: manifests.StudyQuick, Shards: 2, Parallelism: 8, Results: "s3://results.example/runs/2026-11-29/"},
			"aware-study", 2, 2, []string{"study", "adaptation", "--quick", "--shard-index-env=JOB_COMPLETION_INDEX", "--shards=2", "--workers=1", "--out=/out", "--results=s3://results.example/runs/2026-11-29"}, nil, "--quick", "--full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := manifests.StudyJob(studyOptions(t), tc.spec)
			require.NoError(t, err)
			require.Len(t, objs, 2)
			sa, ok := objs[0].(*corev1.ServiceAccount)
			require.True(t, ok, "a ServiceAccount first: %T", objs[0])
			assert.Equal(t, "aware-study", sa.Name)
			assert.Equal(t, "aware-system", sa.Namespace)
			job, ok := objs[1].(*batchv1.Job)
			require.True(t, ok, "then the Job: %T", objs[1])
			assert.Equal(t, tc.jobName, job.Name)
			assert.Equal(t, "aware-system", job.Namespace)
			for _, labels := range []map[string]string{sa.Labels, job.Labels, job.Spec.Template.Labels} {
				assert.Equal(t, "aware-study", labels["app.kubernetes.io/name"])
				assert.Equal(t, "aware", labels["app.kubernetes.io/part-of"])
			}

			s := job.Spec
			require.NotNil(t, s.CompletionMode)
			assert.Equal(t, batchv1.IndexedCompletion, *s.CompletionMode)
			assert.Equal(t, tc.completions, *s.Completions)
			assert.Equal(t, tc.parallelism, *s.Parallelism)
			assert.Equal(t, int32(1), *s.BackoffLimitPerIndex)
			require.NotNil(t, s.PodReplacementPolicy)
			assert.Equal(t, batchv1.Failed, *s.PodReplacementPolicy, "no replacement while the old pod pushes in its grace period")
			assert.Nil(t, s.MaxFailedIndexes)
			assert.Nil(t, s.PodFailurePolicy)
			pod := s.Template.Spec
			assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
			require.NotNil(t, pod.TerminationGracePeriodSeconds)
			assert.Greater(t, *pod.TerminationGracePeriodSeconds, int64(120), "time for the last push, which aware study bounds at 2 minutes")
			assert.Equal(t, "aware-study", pod.ServiceAccountName)
			require.Len(t, pod.Containers, 1)
			c := pod.Containers[0]
			assert.Equal(t, manifests.DefaultImages().Aware, c.Image, "the project's image, as the controller")
			assert.Empty(t, c.Command, "the image's entrypoint, the aware binary: no shell")
			assert.Equal(t, tc.args, c.Args)
			for _, a := range c.Args {
				assert.NotContains(t, a, "$(", "no variable left to the kubelet to expand")
			}

			env := map[string]corev1.EnvVar{}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			assert.Equal(t, "http://aware-objstore.aware-system:7070", env["AWARE_S3_ENDPOINT"].Value)
			for name, key := range map[string]string{"AWARE_S3_ACCESS_KEY": "access-key", "AWARE_S3_SECRET_KEY": "secret-key"} {
				require.NotNil(t, env[name].ValueFrom, name)
				ref := env[name].ValueFrom.SecretKeyRef
				require.NotNil(t, ref, name)
				assert.Equal(t, manifests.ObjectStoreName, ref.Name, "%s from the external services' Secret", name)
				assert.Equal(t, key, ref.Key, name)
			}
			require.NotNil(t, env["GOMEMLIMIT"].ValueFrom)
			assert.Equal(t, "limits.memory", env["GOMEMLIMIT"].ValueFrom.ResourceFieldRef.Resource)
			assert.NotContains(t, env, "JOB_COMPLETION_INDEX", "the Job controller sets it")

			assert.Equal(t, "1", c.Resources.Requests.Cpu().String())
			assert.Equal(t, "2Gi", c.Resources.Requests.Memory().String())
			assert.Equal(t, "4Gi", c.Resources.Limits.Memory().String())
			assert.True(t, c.Resources.Limits.Cpu().IsZero(), "no CPU limit")

			sc := c.SecurityContext
			require.NotNil(t, sc)
			assert.Equal(t, int64(65532), *sc.RunAsUser)
			assert.True(t, *sc.RunAsNonRoot)
			assert.True(t, *sc.ReadOnlyRootFilesystem)
			assert.False(t, *sc.AllowPrivilegeEscalation)
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
			assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)

			mounts := map[string]string{}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			assert.Equal(t, map[string]string{"out": "/out", "tmp": "/tmp"}, mounts)
			for _, v := range pod.Volumes {
				assert.NotNil(t, v.EmptyDir, "%s is an emptyDir", v.Name)
			}
		})
	}
}

func TestStudyJobErrors(t *testing.T) {
	valid := goldenStudyJob()
	with := func(f func(*manifests.StudyJobSpec)) manifests.StudyJobSpec {
		s := valid
		s.Studies = append([]string(nil), valid.Studies...)
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		spec manifests.StudyJobSpec
		want []string
	}{
		{"no studies", with(func(s *manifests.StudyJobSpec) { s.Studies = nil }), []string{"studies: none named"}},
		{"empty name", with(func(s *manifests.StudyJobSpec) { s.Studies = []string{"serving", ""} }), []string{`studies[1] ""`}},
		{"not DNS", with(func(s *manifests.StudyJobSpec) { s.Studies = []string{"Serving", "a b"} }), []string{`studies[0] "Serving"`, `studies[1] "a b"`}},
		{"twice", with(func(s *manifests.StudyJobSpec) { s.Studies = []string{"serving", "serving"} }), []string{`studies[1] "serving": named twice`}},
		{"size", with(func(s *manifests.StudyJobSpec) { s.Size = "paper" }), []string{`size "paper": want quick or full`}},
		{"no size", with(func(s *manifests.StudyJobSpec) { s.Size = "" }), []string{`size ""`}},
		{"no shards", with(func(s *manifests.StudyJobSpec) { s.Shards = 0 }), []string{"shards 0: want 1 to 1000"}},
		{"too many shards", with(func(s *manifests.StudyJobSpec) { s.Shards = 1001 }), []string{"shards 1001: want 1 to 1000"}},
		{"negative parallelism", with(func(s *manifests.StudyJobSpec) { s.Parallelism = -1 }), []string{"parallelism -1"}},
		{"bad job name", with(func(s *manifests.StudyJobSpec) { s.Name = "Study" }), []string{`name "Study"`}},
		{"long job name", with(func(s *manifests.StudyJobSpec) { s.Name = strings.Repeat("a", 62) }), []string{"at most 61 characters with 4 shards"}},
		{"results not s3", with(func(s *manifests.StudyJobSpec) { s.Results = "/out/results" }), []string{`results "/out/results": want s3://BUCKET/PREFIX`}},
		{"results bucket", with(func(s *manifests.StudyJobSpec) { s.Results = "s3://Results/x" }), []string{`results "s3://Results/x"`}},
		{"results empty segment", with(func(s *manifests.StudyJobSpec) { s.Results = "s3://aware/a//b" }), []string{`results "s3://aware/a//b"`}},
		{"results dot-dot", with(func(s *manifests.StudyJobSpec) { s.Results = "s3://aware/../x" }), []string{`results "s3://aware/../x"`}},
		{"results dot", with(func(s *manifests.StudyJobSpec) { s.Results = "s3://aware/./x" }), []string{`results "s3://aware/./x"`}},
		{"results backslash", with(func(s *manifests.StudyJobSpec) { s.Results = `s3://aware/a\b` }), []string{`results "s3://aware/a\\b"`}},
		{"all at once", manifests.StudyJobSpec{Size: "x", Shards: -1}, []string{"studies: none named", `size "x"`, "shards -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manifests.StudyJob(studyOptions(t), tc.spec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "manifests: study job:")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	// 61 characters and 10 shards: <name>-9 is a DNS label; 100 shards: <name>-99 is not.
	long := with(func(s *manifests.StudyJobSpec) { s.Name, s.Shards = strings.Repeat("a", 61), 10 })
	_, err := manifests.StudyJob(studyOptions(t), long)
	require.NoError(t, err)
	long.Shards = 100
	_, err = manifests.StudyJob(studyOptions(t), long)
	require.ErrorContains(t, err, "at most 60 characters with 100 shards")

	o := studyOptions(t)
	o.Components.ExternalServices = false
	_, err = manifests.StudyJob(o, valid)
	require.ErrorContains(t, err, "components.externalServices is off")
}
