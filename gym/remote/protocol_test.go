package remote

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
)

// TestFloatRoundTrip checks that Float writes what encoding/json writes
// for float64 and that every float64 comes back with the same bits.
func TestFloatRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-7, 1e-6, 1e20, 1e21, 123456789.123456789,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 5e-324, 2.2250738585072014e-308, 1 << 53, 1<<53 + 2}
	for range 20000 {
		// Random bit patterns cover every exponent, subnormals included.
		v := math.Float64frombits(rng.Uint64())
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		vals = append(vals, v, rng.Float64(), rng.NormFloat64()*1e9)
	}
	for _, v := range vals {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := json.Marshal(Float(v))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "encoding of %v", v)
		var back Float
		require.NoError(t, json.Unmarshal(got, &back))
		require.Equal(t, math.Float64bits(v), math.Float64bits(float64(back)), "round trip of %v via %s", v, got)
		// encoding/json's own float64 decoding agrees.
		var std float64
		require.NoError(t, json.Unmarshal(got, &std))
		require.Equal(t, math.Float64bits(v), math.Float64bits(std))
	}
	for _, tc := range []struct {
		v    float64
		wire string
	}{{math.NaN(), `"NaN"`}, {math.Inf(1), `"Infinity"`}, {math.Inf(-1), `"-Infinity"`}} {
		got, err := json.Marshal(Float(tc.v))
		require.NoError(t, err)
		assert.Equal(t, tc.wire, string(got))
		var back Float
		require.NoError(t, json.Unmarshal(got, &back))
		if math.IsNaN(tc.v) {
			assert.True(t, math.IsNaN(float64(back)))
		} else {
			assert.Equal(t, tc.v, float64(back))
		}
	}
	// A slice with non-finite values still encodes.
	b, err := json.Marshal(floats([]float64{1, math.NaN(), math.Inf(-1)}))
	require.NoError(t, err)
	assert.JSONEq(t, `[1, "NaN", "-Infinity"]`, string(b))
}

func TestParseFloatErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`null`, "is null; want a number (JavaScript"},
		{`"abc"`, `is the string "abc"; want a number`},
		{`true`, "is a boolean"},
		{`[1]`, "is an array"},
		{`{}`, "is an object"},
		{`1e400`, "= 1e400 is out of the float64 range"},
		{`-1e400`, "out of the float64 range"},
		{``, "is empty"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := parseFloat([]byte(tc.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	var f Float
	assert.ErrorContains(t, json.Unmarshal([]byte(`null`), &f), "is null")
}

// fill sets every numeric and boolean field of v (a pointer to a struct)
// to a distinct value, recursively.
func fill(v reflect.Value, next *float64) {
	for i := range v.NumField() {
		f := v.Field(i)
		*next++
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(int64(*next))
		case reflect.Float64:
			f.SetFloat(*next + 0.25)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Struct:
			fill(f, next)
		default:
			panic("fill: unexpected kind " + f.Kind().String())
		}
	}
}

// TestInfoCarriesEveryField fails when gym.Info or gym.Metrics grows a
// field the wire form does not carry.
func TestInfoCarriesEveryField(t *testing.T) {
	var in gym.Info
	n := 0.0
	fill(reflect.ValueOf(&in).Elem(), &n)
	in.Metrics.LatencyP99 = math.Inf(1)
	in.SP = math.NaN()
	b, err := json.Marshal(infoJSON(in))
	require.NoError(t, err)
	var back InfoJSON
	require.NoError(t, json.Unmarshal(b, &back))
	got := back.Info()
	assert.True(t, math.IsNaN(got.SP))
	got.SP, in.SP = 0, 0
	assert.Equal(t, in, got)

	// snake_case names with the SP and SLO fields.
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.ElementsMatch(t, []string{"step", "metrics", "sp", "slo_violated"}, keys(m))
	assert.ElementsMatch(t, []string{"replicas", "ready_replicas", "cpu_limit", "memory_limit", "cpu_usage", "memory_usage",
		"memory_peak", "io_rate", "net_rate", "arrival_rate", "processed_rate", "dropped_rate", "latency_p50", "latency_p95",
		"latency_p99", "oom_kills"}, keys(m["metrics"].(map[string]any)))
	assert.Equal(t, reflect.TypeFor[gym.Metrics]().NumField(), len(m["metrics"].(map[string]any)))
	assert.Equal(t, "Infinity", m["metrics"].(map[string]any)["latency_p99"])
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSpaceJSON(t *testing.T) {
	e, err := gym.Embed(constEnv{}, []float64{0.5})
	require.NoError(t, err)
	s := e.ObservationSpace() // unbounded embedding dimension
	b, err := json.Marshal(spaceJSON(s))
	require.NoError(t, err)
	assert.JSONEq(t, `{"names":["a","b","embedding_0"],"low":[0,0,"-Infinity"],"high":[1,1,"Infinity"],"dims":3}`, string(b))
	var back SpaceJSON
	require.NoError(t, json.Unmarshal(b, &back))
	got, err := back.Space()
	require.NoError(t, err)
	assert.Equal(t, s, got)

	back.Dims = 2
	_, err = back.Space()
	assert.ErrorContains(t, err, "dims 2 but 3 names")
	back.Dims, back.Low = 3, back.Low[:2]
	_, err = back.Space()
	assert.ErrorContains(t, err, "3 names, 2 lows")
}
