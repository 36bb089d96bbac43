package generator

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testProfile is the committed calibration profile: the golden files are
// the pool users get, so a re-measured profile (make calibrate) changes
// them; rewrite them with go test ./generator -update and review the diff.
func testProfile(t testing.TB) *calibration.Profile {
	t.Helper()
	p, err := calibration.Default()
	require.NoError(t, err)
	return p
}

func opts(apps int, seed int64) Options {
	o := DefaultOptions()
	o.Apps, o.Seed = apps, seed
	return o
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run `go test ./generator -update` to create it")
	assert.Equal(t, string(want), string(got), "%s differs; rerun with -update if the change is intended", path)
}

// readTree returns every file under dir by relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[rel] = data
		return err
	}))
	return files
}

func writePool(t *testing.T, o Options, prof *calibration.Profile) map[string][]byte {
	t.Helper()
	apps, err := Generate(o, prof)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, WriteDir(dir, apps))
	require.NoError(t, WriteManifests(dir, apps, ManifestOptions{}))
	return readTree(t, dir)
}

func TestGenerateIsDeterministic(t *testing.T) {
	prof := testProfile(t)
	a := writePool(t, opts(60, 3), prof)
	b := writePool(t, opts(60, 3), prof)
	require.Len(t, a, 2*60+1)
	assert.Equal(t, a, b, "same seed, byte-identical pool")

	c := writePool(t, opts(60, 4), prof)
	assert.NotEqual(t, a["apps/app-0001.yaml"], c["apps/app-0001.yaml"], "another seed, another app")
}

func TestGenerateKeepsPrefix(t *testing.T) {
	prof := testProfile(t)
	small, err := Generate(opts(10, 9), prof)
	require.NoError(t, err)
	large, err := Generate(opts(300, 9), prof)
	require.NoError(t, err)
	for i := range small {
		s, l := small[i], large[i]
		s.Split, l.Split = "", ""
		assert.Equal(t, s, l, "app %d", i+1)
	}
}

func TestSplit(t *testing.T) {
	prof := testProfile(t)
	for _, tc := range []struct {
		apps        int
		fraction    float64
		train, test int
	}{
		{1000, 0.8, 800, 200},
		{10, 0.8, 8, 2},
		{7, 0.5, 4, 3}, // round half away from zero
		{5, 0, 0, 5},
		{5, 1, 5, 0},
	} {
		o := opts(tc.apps, 1)
		o.TrainFraction = tc.fraction
		apps, err := Generate(o, prof)
		require.NoError(t, err)
		s := Summarize(apps, prof)
		assert.Equal(t, [2]int{tc.train, tc.test}, [2]int{s.Train, s.Test}, "%d apps at %g", tc.apps, tc.fraction)
	}
	// The split is a shuffle, not a prefix.
	apps, err := Generate(opts(1000, 1), prof)
	require.NoError(t, err)
	var firstTest int
	for i, a := range apps {
		if a.Split == SplitTest {
			firstTest = i
			break
		}
	}
	assert.Less(t, firstTest, 50)
}

// TestGeneratedApps checks the invariants of a full pool against the
// committed calibration profile.
func TestGeneratedApps(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	o := DefaultOptions()
	apps, err := Generate(o, prof)
	require.NoError(t, err)
	require.Len(t, apps, 1000)
	bounds := gym.DefaultBounds()
	chains := map[string]bool{}
	for i, a := range apps {
		require.NoError(t, a.Validate())
		assert.Equal(t, AppName(i+1), a.Name())
		require.GreaterOrEqual(t, len(a.Spec.Segments), 1)
		require.LessOrEqual(t, len(a.Spec.Segments), o.MaxSegments)
		for _, s := range a.Spec.Segments {
			_, ok := prof.Lookup(s.Name, s.Size)
			assert.True(t, ok, "%s: %s/%d is not calibrated", a.Name(), s.Name, s.Size)
			info, _ := segments.Lookup(s.Name)
			assert.Contains(t, info.Sizes, s.Size)
		}
		key := chainKey(a.Spec.Segments)
		assert.False(t, chains[key], "%s repeats chain %s", a.Name(), key)
		chains[key] = true
		assert.LessOrEqual(t, a.Load.MeanRate, o.MaxRate)
		assert.GreaterOrEqual(t, a.SLO.Slack, o.Slack.Min)
		assert.LessOrEqual(t, a.SLO.Slack, o.Slack.Max)
		m, err := sim.NewModel(prof, a.Spec.Segments, a.Env.Speed, sim.DefaultOverheads())
		require.NoError(t, err)
		if a.SLO.Kind == LatencySLO {
			assert.GreaterOrEqual(t, a.SLO.LatencyP99, MinLatencySLO)
			// The SLO is the slack times the model's p99 at the reference
			// point, above the isolated p99 it contains.
			ref, err := ReferenceP99(m, a.Concurrency, o.ReferenceCPU, o.ReferenceUtil)
			require.NoError(t, err)
			assert.InDelta(t, ref, a.SLO.Reference, 1e-6)
			assert.Greater(t, ref, m.P99)
			assert.InDelta(t, math.Max(a.SLO.Slack*ref, MinLatencySLO), a.SLO.LatencyP99, 1e-4)
			// The CPU floor meets the SLO at the reference utilisation; a
			// step below it does not.
			p99, err := ReferenceP99(m, a.Concurrency, a.MinCPU, o.ReferenceUtil)
			require.NoError(t, err)
			assert.LessOrEqual(t, p99, a.SLO.LatencyP99, a.Name())
			if below := a.MinCPU - gym.CPUStep; below >= bounds.MinCPU {
				p99, err := ReferenceP99(m, a.Concurrency, below, o.ReferenceUtil)
				assert.True(t, err != nil || p99 > a.SLO.LatencyP99, "%s: %g cores already meet the SLO", a.Name(), below)
			}
			assert.LessOrEqual(t, a.MinCPU, o.ReferenceCPU, "the reference pod meets any slack ≥ 1")
		} else {
			assert.Equal(t, bounds.MinCPU, a.MinCPU)
		}
		// Slots: enough to keep the largest pod busy, twice over.
		assert.GreaterOrEqual(t, float64(a.Concurrency), math.Min(2*bounds.MaxCPU*m.P50/m.CPU, 1e9)-1, a.Name())
		assert.GreaterOrEqual(t, a.Concurrency, MinConcurrency)
		// Initial memory: the working set with every slot running fits.
		assert.GreaterOrEqual(t, a.Initial.Memory, math.Min(m.WorkingSet(float64(a.Concurrency), a.Concurrency), bounds.MaxMemory), a.Name())
		assert.True(t, a.Initial.Replicas >= bounds.MinReplicas && a.Initial.Replicas <= 2)
		assert.True(t, a.Initial.CPU >= 0.5 && a.Initial.CPU <= math.Max(1.024, a.MinCPU), "cpu %g", a.Initial.CPU)
		assert.GreaterOrEqual(t, a.Initial.CPU, a.MinCPU)
		assert.True(t, a.Initial.Memory >= bounds.MinMemory && a.Initial.Memory <= bounds.MaxMemory)
		switch a.Env.NodeClass {
		case NodeX86:
			assert.InDelta(t, 1, a.Env.Speed, 0.1)
		case NodePower:
			assert.True(t, a.Env.Speed >= 0.7 && a.Env.Speed <= 0.9)
		}
	}
	s := Summarize(apps, prof)
	assert.Equal(t, 800, s.Train)
	for _, c := range s.SLOKinds {
		if c.Name == ThroughputSLO {
			assert.InDelta(t, 150, c.N, 40, "about 15 %% throughput SLOs")
		}
	}
	for _, c := range s.NodeClasses {
		assert.InDelta(t, 500, c.N, 60, "about half %s", c.Name)
	}
	assert.Len(t, s.Sources, 3)
}

func TestGenerateErrors(t *testing.T) {
	prof := testProfile(t)
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no apps", func(o *Options) { o.Apps = 0 }, "apps: 0 must be positive"},
		{"negative max segments", func(o *Options) { o.MaxSegments = -1 }, "maxSegments: -1 must be positive"},
		{"train fraction", func(o *Options) { o.TrainFraction = 1.5 }, "trainFraction: 1.5 is not in [0, 1]"},
		{"slack", func(o *Options) { o.Slack = Range{3, 2} }, "slack: [3, 2] is not a positive range"},
		{"source", func(o *Options) { o.Sources = []string{"nasa", "wiki"} }, `sources[1]: unknown source "wiki"`},
		{"rate", func(o *Options) { o.MaxRate = 0 }, "maxRate: 0 must be positive"},
		{"reference CPU", func(o *Options) { o.ReferenceCPU = 0 }, "referenceCPU: 0 cores must be positive"},
		{"reference utilisation", func(o *Options) { o.ReferenceUtil = 1 }, "referenceUtil: 1 is not in (0, 1)"},
		{"too few distinct chains", func(o *Options) { o.MaxSegments, o.Apps = 1, 500 }, "no chain of 1..1 segments unlike the earlier apps'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(20, 1)
			tc.edit(&o)
			_, err := Generate(o, prof)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err := Generate(opts(1, 1), nil)
	assert.ErrorContains(t, err, "calibration profile is nil")
	_, err = Generate(opts(1, 1), &calibration.Profile{Version: calibration.Version})
	assert.ErrorContains(t, err, "no entry of a known segment")
}

func TestAppValidate(t *testing.T) {
	base := manifestApps()[0]
	require.NoError(t, base.Validate())
	for _, tc := range []struct {
		name  string
		edit  func(*App)
		wants []string
	}{
		{"spec", func(a *App) { a.Spec.Segments = nil }, []string{"spec: segments: at least one segment is required"}},
		{"latency with throughput", func(a *App) { a.SLO.Throughput = 3 }, []string{"slo: a latency SLO needs"}},
		{"kind", func(a *App) { a.SLO.Kind = "cost" }, []string{`slo.kind: "cost"`}},
		{"offset", func(a *App) { a.Load.Offset = 3600 }, []string{"load.offset: 3600 is outside the azure-llm span [0, 3600)"}},
		{"source and rate", func(a *App) { a.Load.Source, a.Load.MeanRate = "x", 0 }, []string{`load.source: "x"`, "load.meanRate: 0"}},
		{"env", func(a *App) { a.Env = Environment{NodeClass: "arm", Speed: -1, Noise: 2} }, []string{`env.nodeClass: "arm"`, "env.speed: -1", "env.noise: 2"}},
		{"split", func(a *App) { a.Split = "dev" }, []string{`split: "dev"`}},
		{"initial", func(a *App) { a.Initial = Resources{} }, []string{"initial.replicas: 0", "initial.cpu: 0", "initial.memory: 0"}},
		{"profile SLO", func(a *App) { a.Profile.SLO.LatencyP99Seconds = 9 }, []string{"profile.slo:"}},
		{"profile", func(a *App) { a.Profile.Targets.CPU = 3 }, []string{"profile: targets.cpu: 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			a.Spec.Segments = slices.Clone(base.Spec.Segments)
			tc.edit(&a)
			err := a.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), `app "shop"`)
			for _, w := range tc.wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestReadDirRoundTrip(t *testing.T) {
	apps, err := Generate(opts(40, 5), testProfile(t))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, WriteDir(dir, apps))
	got, err := ReadDir(dir)
	require.NoError(t, err)
	assert.Equal(t, apps, got)
}

func TestReadDirErrors(t *testing.T) {
	_, err := ReadDir("/nonexistent/pool")
	assert.ErrorContains(t, err, "read pool /nonexistent/pool")

	apps, err := Generate(opts(3, 5), testProfile(t))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, WriteDir(dir, apps))
	path := filepath.Join(dir, "apps", "app-0002.yaml")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, bytes.Replace(data, []byte("name: app-0002"), []byte("name: app-0009"), 1), 0o644))
	_, err = ReadDir(dir)
	assert.ErrorContains(t, err, `app "app-0009"`)
	assert.ErrorContains(t, err, "lists apps[1] as \"app-0002\"")

	require.NoError(t, os.WriteFile(path, []byte("spec: {}\nsurprise: 1\n"), 0o644))
	_, err = ReadDir(dir)
	assert.ErrorContains(t, err, `unknown field "surprise"`)

	require.NoError(t, os.Remove(path))
	_, err = ReadDir(dir)
	assert.ErrorContains(t, err, "apps[1]")

	dup := []App{apps[0], apps[0]}
	assert.ErrorContains(t, WriteDir(t.TempDir(), dup), `apps[1]: duplicate name "app-0001"`)
}

// manifestApps are hand-written apps covering the manifests' variants: a
// chain with the object store and the database on x86, a throughput SLO on
// Power, and a plain CPU chain.
func manifestApps() []App {
	mk := func(name string, chain []segments.Spec, slo SLO, env Environment, split string, init Resources) App {
		p := v1alpha1.DefaultAgentProfile()
		p.SLO = slo.ProfileSLO()
		return App{
			Spec:        app.Spec{APIVersion: app.SpecVersion, Kind: "App", Name: name, Seed: 42, Segments: chain},
			SLO:         slo,
			Load:        Load{Source: SourceAzureLLM, Seed: 7, Offset: 120, MeanRate: 25},
			Env:         env,
			Split:       split,
			Initial:     init,
			Concurrency: 6,
			MinCPU:      0.256,
			Profile:     p,
		}
	}
	return []App{
		mk("shop", []segments.Spec{{Name: "json2yaml", Size: 1000}, {Name: "objectRead", Size: 131072}, {Name: "dbWrite", Size: 16}},
			SLO{Kind: LatencySLO, LatencyP99: 0.05, Slack: 2.5}, Environment{NodeClass: NodeX86, Speed: 1, Noise: 0.03},
			SplitTrain, Resources{Replicas: 2, CPU: 0.64, Memory: 256 * gym.MiB}),
		mk("batch", []segments.Spec{{Name: "floatOperations", Size: 640000}, {Name: "compress", Size: 262144}},
			SLO{Kind: ThroughputSLO, Throughput: 10, Slack: 2.5}, Environment{NodeClass: NodePower, Speed: 0.8, Noise: 0.07},
			SplitTest, Resources{Replicas: 1, CPU: 1.024, Memory: 384 * gym.MiB}),
		mk("resize", []segments.Spec{{Name: "imageResize", Size: 320}},
			SLO{Kind: LatencySLO, LatencyP99: 0.04, Slack: 1.5}, Environment{NodeClass: NodeX86, Speed: 1.05, Noise: 0.02},
			SplitTrain, Resources{Replicas: 1, CPU: 0.512, Memory: 256 * gym.MiB}),
	}
}

func TestManifestGolden(t *testing.T) {
	for i, a := range manifestApps() {
		o := ManifestOptions{}
		if i == 1 {
			o = ManifestOptions{Namespace: "aware-apps", Recommender: "default", UpdateMode: v1alpha1.UpdateModeRecreate}
		}
		data, err := Manifest(a, o)
		require.NoError(t, err)
		golden(t, "manifest-"+a.Name()+".golden", data)

		// Every document decodes strictly into its typed object.
		docs := strings.Split(string(data), "\n---\n")
		require.Len(t, docs, 4)
		var cm corev1.ConfigMap
		require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &cm))
		spec, err := app.Parse("configmap", []byte(cm.Data["app.yaml"]))
		require.NoError(t, err)
		assert.Equal(t, a.Spec, spec)
		var d appsv1.Deployment
		require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &d))
		c := d.Spec.Template.Spec.Containers[0]
		assert.Equal(t, c.Resources.Requests, c.Resources.Limits)
		var svc corev1.Service
		require.NoError(t, yaml.UnmarshalStrict([]byte(docs[2]), &svc))
		var mpa v1alpha1.MultidimPodAutoscaler
		require.NoError(t, yaml.UnmarshalStrict([]byte(docs[3]), &mpa))
		require.NotNil(t, mpa.Spec.Agent)
		assert.Equal(t, a.Profile, *mpa.Spec.Agent)
		assert.Equal(t, int32(20), mpa.Spec.Constraints.MaxReplicas)
		assert.Equal(t, d.Name, mpa.Spec.ScaleTargetRef.Name)
	}
}

func TestManifestServices(t *testing.T) {
	apps := manifestApps()
	objs, err := Build(apps[0], ManifestOptions{})
	require.NoError(t, err)
	var names []string
	for _, e := range objs.Deployment.Spec.Template.Spec.Containers[0].Env {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"AWARE_S3_ENDPOINT", "AWARE_S3_ACCESS_KEY", "AWARE_S3_SECRET_KEY", "AWARE_DATABASE_URL"}, names)
	objs, err = Build(apps[2], ManifestOptions{})
	require.NoError(t, err)
	assert.Empty(t, objs.Deployment.Spec.Template.Spec.Containers[0].Env)
	assert.Equal(t, "amd64", objs.Deployment.Spec.Template.Spec.NodeSelector[corev1.LabelArchStable])

	_, err = Build(apps[0], ManifestOptions{NodeArch: map[string]string{NodePower: "ppc64le"}})
	assert.ErrorContains(t, err, `no node architecture for node class "x86"`)
	bad := apps[0]
	bad.Split = ""
	_, err = Build(bad, ManifestOptions{})
	assert.ErrorContains(t, err, "split")
}

func TestClassify(t *testing.T) {
	prof := testProfile(t)
	for _, tc := range []struct {
		chain []segments.Spec
		want  string
	}{
		{[]segments.Spec{{Name: "floatOperations", Size: 2560000}}, ClassCPU},
		{[]segments.Spec{{Name: "compress", Size: 1048576}, {Name: "imageRotate", Size: 320}}, ClassCPU},
		{[]segments.Spec{{Name: "readFile", Size: 1048576}}, ClassIO},
		{[]segments.Spec{{Name: "dbRead", Size: 10240}}, ClassIO},
		{[]segments.Spec{{Name: "sleep", Size: 100}}, ClassWait},
		{[]segments.Spec{{Name: "sleep", Size: 500}, {Name: "sleep", Size: 500}}, ClassMemory},
	} {
		in, err := Classify(prof, tc.chain)
		require.NoError(t, err)
		assert.Equal(t, tc.want, in.Class, "%v: %+v", tc.chain, in)
	}
	_, err := Classify(prof, []segments.Spec{{Name: "sleep", Size: 7}})
	assert.ErrorContains(t, err, "sleep at size 7 is not in the calibration profile")
}

func TestSummaryTuning(t *testing.T) {
	apps := manifestApps()
	assert.Zero(t, Summarize(apps, nil).Tuning.Tuned)
	for i, v := range []float64{0, 0.004, 0.08} {
		apps[i].Profile.Targets.CPU = []float64{0.6, 0.45, 0.2}[i]
		apps[i].Tuning = &Tuning{Window: "24h0m0s", Violations: v, Met: v <= 0.01, MaxViolations: 0.01}
	}
	s := Summarize(apps, nil)
	assert.Equal(t, TuningSummary{Tuned: 3, Met: 2, Window: "24h0m0s", MaxViolations: 0.01,
		CPUTarget:  Quantiles{Min: 0.2, P10: 0.25, P50: 0.45, P90: 0.57, Max: 0.6},
		Violations: Quantiles{Min: 0, P10: 0.0008, P50: 0.004, P90: 0.0648, Max: 0.08}}, roundTuning(s.Tuning))
	var b strings.Builder
	require.NoError(t, s.WriteMarkdown(&b))
	assert.Contains(t, b.String(), "### HPA+VPA baseline's CPU targets")
	assert.Contains(t, b.String(), "| 3 | 2 | 24h0m0s | 0.01 | CPU target | 0.2 | 0.25 | 0.45 | 0.57 | 0.6 |")
}

func roundTuning(t TuningSummary) TuningSummary {
	r := func(q Quantiles) Quantiles {
		f := func(x float64) float64 { return math.Round(x*1e6) / 1e6 }
		return Quantiles{f(q.Min), f(q.P10), f(q.P50), f(q.P90), f(q.Max)}
	}
	t.CPUTarget, t.Violations = r(t.CPUTarget), r(t.Violations)
	return t
}

func TestSummaryGolden(t *testing.T) {
	prof := testProfile(t)
	apps, err := Generate(opts(200, 7), prof)
	require.NoError(t, err)
	s := Summarize(apps, prof)
	var md, txt bytes.Buffer
	require.NoError(t, s.WriteMarkdown(&md))
	require.NoError(t, s.WriteText(&txt))
	golden(t, "summary.md.golden", md.Bytes())
	golden(t, "summary.txt.golden", txt.Bytes())

	empty := Summarize(nil, nil)
	assert.Zero(t, empty.Apps)
	require.NoError(t, empty.WriteMarkdown(&md))
}

func BenchmarkGenerate(b *testing.B) {
	prof := testProfile(b)
	for b.Loop() {
		if _, err := Generate(DefaultOptions(), prof); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGenerateSelected(t *testing.T) {
	prof := testProfile(t)
	opts := DefaultOptions()
	opts.Seed = 3
	pool, err := Generate(opts, prof)
	require.NoError(t, err)
	for _, sel := range []uint64{0, 5} {
		got, err := GenerateSelected(prof, 3, 7, sel)
		require.NoError(t, err)
		assert.Equal(t, Select(pool, 7, sel), got, "select seed %d", sel)
	}
}
