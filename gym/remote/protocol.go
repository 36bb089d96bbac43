package remote

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/aware-autoscaler/aware/gym"
)

// APIVersion prefixes every environment endpoint.
const APIVersion = "v1"

// The strings that stand for the floats JSON cannot carry.
const (
	jsonNaN    = "NaN"
	jsonPosInf = "Infinity"
	jsonNegInf = "-Infinity"
)

// Float is a float64 that always encodes: finite values as JSON numbers in
// the shortest form that parses back to the same bits (as encoding/json
// writes float64), NaN and ±Inf as the strings "NaN", "Infinity" and
// "-Infinity". It decodes both forms.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	return appendFloat(nil, float64(f)), nil
}

// appendFloat appends f as encoding/json would, or as one of the strings
// for non-finite values.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"`+jsonNaN+`"`...)
	case math.IsInf(f, 1):
		return append(b, `"`+jsonPosInf+`"`...)
	case math.IsInf(f, -1):
		return append(b, `"`+jsonNegInf+`"`...)
	}
	// The format encoding/json uses for float64 (ES6 number-to-string).
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// UnmarshalJSON implements json.Unmarshaler; null is refused.
func (f *Float) UnmarshalJSON(b []byte) error {
	v, err := parseFloat(b)
	if err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// parseFloat parses one JSON value as a float: a number, or one of the
// three strings. The error describes what the value is instead.
func parseFloat(raw []byte) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, fmt.Errorf("is empty; want a number")
	}
	switch c := raw[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return 0, fmt.Errorf("= %s is out of the float64 range", raw)
			}
			return 0, fmt.Errorf("= %s is not a number", raw)
		}
		return v, nil
	case c == '"':
		s, err := strconv.Unquote(string(raw))
		if err != nil {
			return 0, fmt.Errorf("is a malformed string")
		}
		switch s {
		case jsonNaN:
			return math.NaN(), nil
		case jsonPosInf:
			return math.Inf(1), nil
		case jsonNegInf:
			return math.Inf(-1), nil
		}
		return 0, fmt.Errorf("is the string %q; want a number (or %q, %q, %q)", s, jsonNaN, jsonPosInf, jsonNegInf)
	case c == 'n':
		return 0, fmt.Errorf("is null; want a number (JavaScript's JSON.stringify writes NaN and Infinity as null)")
	case c == 't' || c == 'f':
		return 0, fmt.Errorf("is a boolean; want a number")
	case c == '[':
		return 0, fmt.Errorf("is an array; want a number")
	case c == '{':
		return 0, fmt.Errorf("is an object; want a number")
	}
	return 0, fmt.Errorf("is not a JSON value")
}

// floats converts to the wire form.
func floats(xs []float64) []Float {
	if xs == nil {
		return []Float{}
	}
	out := make([]Float, len(xs))
	for i, x := range xs {
		out[i] = Float(x)
	}
	return out
}

// float64s converts from the wire form.
func float64s(xs []Float) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// SpaceJSON is a gym.Space on the wire.
type SpaceJSON struct {
	Names []string `json:"names"`
	Low   []Float  `json:"low"`
	High  []Float  `json:"high"`
	// Dims is the number of dimensions (the length of every list).
	Dims int `json:"dims"`
}

// spaceJSON converts a space to the wire form.
func spaceJSON(s gym.Space) SpaceJSON {
	names := s.Names
	if names == nil {
		names = []string{}
	}
	return SpaceJSON{Names: names, Low: floats(s.Low), High: floats(s.High), Dims: s.Dim()}
}

// Space converts back, checking the lists agree.
func (s SpaceJSON) Space() (gym.Space, error) {
	out := gym.Space{Names: s.Names, Low: float64s(s.Low), High: float64s(s.High)}
	if s.Dims != len(s.Names) {
		return gym.Space{}, fmt.Errorf("space: dims %d but %d names", s.Dims, len(s.Names))
	}
	if err := out.Validate(); err != nil {
		return gym.Space{}, err
	}
	return out, nil
}

// SpacesResponse is the body of GET /v1/envs/{name}/spaces.
type SpacesResponse struct {
	Observation SpaceJSON `json:"observation"`
	Action      SpaceJSON `json:"action"`
}

// EnvsResponse is the body of GET /v1/envs.
type EnvsResponse struct {
	Envs []string `json:"envs"`
}

// MetricsJSON is gym.Metrics on the wire, in the units of gym.Metrics:
// cores, bytes, bytes/s, requests/s and seconds.
type MetricsJSON struct {
	Replicas      int   `json:"replicas"`
	ReadyReplicas int   `json:"ready_replicas"`
	CPULimit      Float `json:"cpu_limit"`
	MemoryLimit   Float `json:"memory_limit"`
	CPUUsage      Float `json:"cpu_usage"`
	MemoryUsage   Float `json:"memory_usage"`
	MemoryPeak    Float `json:"memory_peak"`
	IORate        Float `json:"io_rate"`
	NetRate       Float `json:"net_rate"`
	ArrivalRate   Float `json:"arrival_rate"`
	ProcessedRate Float `json:"processed_rate"`
	DroppedRate   Float `json:"dropped_rate"`
	LatencyP50    Float `json:"latency_p50"`
	LatencyP95    Float `json:"latency_p95"`
	LatencyP99    Float `json:"latency_p99"`
	OOMKills      int   `json:"oom_kills"`
}

// InfoJSON is gym.Info on the wire.
type InfoJSON struct {
	Step        int         `json:"step"`
	Metrics     MetricsJSON `json:"metrics"`
	SP          Float       `json:"sp"`
	SLOViolated bool        `json:"slo_violated"`
}

// infoJSON converts an Info to the wire form.
func infoJSON(in gym.Info) InfoJSON {
	m := in.Metrics
	return InfoJSON{
		Step: in.Step,
		Metrics: MetricsJSON{
			Replicas: m.Replicas, ReadyReplicas: m.ReadyReplicas,
			CPULimit: Float(m.CPULimit), MemoryLimit: Float(m.MemoryLimit),
			CPUUsage: Float(m.CPUUsage), MemoryUsage: Float(m.MemoryUsage), MemoryPeak: Float(m.MemoryPeak),
			IORate: Float(m.IORate), NetRate: Float(m.NetRate),
			ArrivalRate: Float(m.ArrivalRate), ProcessedRate: Float(m.ProcessedRate), DroppedRate: Float(m.DroppedRate),
			LatencyP50: Float(m.LatencyP50), LatencyP95: Float(m.LatencyP95), LatencyP99: Float(m.LatencyP99),
			OOMKills: m.OOMKills,
		},
		SP:          Float(in.SP),
		SLOViolated: in.SLOViolated,
	}
}

// Info converts back.
func (in InfoJSON) Info() gym.Info {
	m := in.Metrics
	return gym.Info{
		Step: in.Step,
		Metrics: gym.Metrics{
			Replicas: m.Replicas, ReadyReplicas: m.ReadyReplicas,
			CPULimit: float64(m.CPULimit), MemoryLimit: float64(m.MemoryLimit),
			CPUUsage: float64(m.CPUUsage), MemoryUsage: float64(m.MemoryUsage), MemoryPeak: float64(m.MemoryPeak),
			IORate: float64(m.IORate), NetRate: float64(m.NetRate),
			ArrivalRate: float64(m.ArrivalRate), ProcessedRate: float64(m.ProcessedRate), DroppedRate: float64(m.DroppedRate),
			LatencyP50: float64(m.LatencyP50), LatencyP95: float64(m.LatencyP95), LatencyP99: float64(m.LatencyP99),
			OOMKills: m.OOMKills,
		},
		SP:          float64(in.SP),
		SLOViolated: in.SLOViolated,
	}
}

// ResetRequest is the body of POST /v1/envs/{name}/reset. Without a seed
// (or with an empty body) the server uses the environment's previous seed
// plus one (1 before the first reset), and says which in the response.
type ResetRequest struct {
	Seed *uint64 `json:"seed,omitempty"`
}

// ResetResponse is the reply to a reset.
type ResetResponse struct {
	Obs  []Float  `json:"obs"`
	Info InfoJSON `json:"info"`
	// Seed is the seed the environment was reset with.
	Seed uint64 `json:"seed"`
}

// StepRequest is the body of POST /v1/envs/{name}/step: one value per
// action dimension, finite.
type StepRequest struct {
	Action []Float `json:"action"`
}

// StepResponse is the reply to a step.
type StepResponse struct {
	Obs        []Float  `json:"obs"`
	Reward     Float    `json:"reward"`
	Terminated bool     `json:"terminated"`
	Truncated  bool     `json:"truncated"`
	Info       InfoJSON `json:"info"`
}

// ErrorResponse is the body of every error reply.
type ErrorResponse struct {
	Error string `json:"error"`
}

// HealthResponse is the body of GET /healthz.
type HealthResponse struct {
	Status string `json:"status"`
}
