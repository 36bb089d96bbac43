package telemetry

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errFoldedKey is referenceDecode's refusal of a body that encoding/json
// and decodeQueryResponse read differently by design.
var errFoldedKey = errors.New("a key that matches one of the response's only when its case is folded")

// responseKeys are the object keys of a query response either decoder
// reads.
var responseKeys = []string{"status", "errorType", "error", "warnings", "data", "resultType", "result", "metric", "value", "values", "histogram"}

// foldedKey says whether v holds an object key that differs from one of
// responseKeys only in case ("metriC"): encoding/json, which the
// reference decodes with, folds the case of a struct's keys, where
// decodeQueryResponse matches them exactly, as Prometheus writes them.
func foldedKey(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			for _, known := range responseKeys {
				if k != known && strings.EqualFold(k, known) {
					return true
				}
			}
			if foldedKey(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if foldedKey(e) {
				return true
			}
		}
	}
	return false
}

// referenceDecode decodes a query response with the Prometheus client's
// model types, keeping float samples (elements with a value) only. It
// refuses (errFoldedKey) a body with a key that matches a response key
// only when its case is folded.
func referenceDecode(body []byte) (status, resultType string, samples []vecSample, err error) {
	var tree any
	if err := json.Unmarshal(body, &tree); err != nil {
		return "", "", nil, err
	}
	if foldedKey(tree) {
		return "", "", nil, errFoldedKey
	}
	var ref struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ref); err != nil {
		return "", "", nil, err
	}
	if ref.Data.ResultType != "vector" {
		return ref.Status, ref.Data.ResultType, nil, nil
	}
	var vec model.Vector
	if err := json.Unmarshal(ref.Data.Result, &vec); err != nil {
		return "", "", nil, err
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(ref.Data.Result, &raw); err != nil {
		return "", "", nil, err
	}
	for i, s := range vec {
		// The client makes a zero sample of an element without a value;
		// decodeQueryResponse drops it (a zero that looks real).
		if _, ok := raw[i]["value"]; !ok || s.Histogram != nil {
			continue
		}
		m := s.Metric
		samples = append(samples, vecSample{namespace: string(m["namespace"]), pod: string(m["pod"]),
			container: string(m["container"]), resource: string(m["resource"]), le: string(m["le"]),
			source: string(m["source"]), value: float64(s.Value)})
	}
	return ref.Status, ref.Data.ResultType, samples, nil
}

// TestDecodeKeysExactly: a key that matches a response key only with its
// case folded is not that key (the fuzzer's "metriC", which encoding/json
// would read as "metric"), and the reference refuses to compare such a
// body.
func TestDecodeKeysExactly(t *testing.T) {
	body := []byte(`{"status":"success","data":{"resultType":"vector","result":[{"metriC":{"le":"000"},"value":[0,"0"]}]}}`)
	got, err := decodeQueryResponse(body)
	require.NoError(t, err)
	require.Len(t, got.samples, 1)
	assert.Empty(t, got.samples[0].le, "metriC is not metric")
	_, _, _, err = referenceDecode(body)
	assert.ErrorIs(t, err, errFoldedKey)
	_, _, _, err = referenceDecode([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"LE":"1"},"value":[0,"0"]}]}}`))
	assert.NoError(t, err, "label names are a map's keys, matched exactly by both")
}

func assertSameSamples(t testing.TB, want, got []vecSample) {
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		if math.IsNaN(w.value) {
			assert.True(t, math.IsNaN(g.value), "sample %d", i)
			w.value, g.value = 0, 0
		}
		assert.Equal(t, w, g, "sample %d", i)
	}
}

const richResponse = `{
  "status" : "success",
  "data" : {
    "resultType" : "vector",
    "result" : [
      {"metric": {"__name__": "x", "namespace": "a\"b", "pod": "p\u00e9\ud83d\ude00", "container": "app", "job": "k"},
       "value": [1772366400.123, "1.5e3"]},
      {"metric": {}, "value": [1772366400, "NaN"]},
      {"metric": {"pod": "p", "le": "+Inf", "resource": "cpu", "source": "cadvisor"}, "value": [1772366400, "+Inf"]},
      {"metric": {"pod": "h"}, "histogram": [1772366400, {"count": "3", "sum": "1", "buckets": [[0, "0.1", "0.2", "3"]]}]},
      {"value": [1700000000, "-Inf"], "metric": {"namespace": "ns", "pod": "late"}, "future": {"nested": [1, true, null, false, -2.5e-3]}}
    ]
  },
  "warnings": ["careful"],
  "infos": ["fyi"]
}`

func TestDecodeMatchesClient(t *testing.T) {
	at := t0
	pods := []podData{fullPod("apps", "web-a", at), fullPod("apps", "web-b", at)}
	pods[1].mem = math.NaN()
	bodies := map[string][]byte{"rich": []byte(richResponse),
		"result before resultType": []byte(`{"status":"success","data":{"result":[{"metric":{"pod":"x"},"value":[1,"2"]}],"resultType":"vector"}}`),
		"scalar":                   []byte(`{"status":"success","data":{"resultType":"scalar","result":[1772366400,"1"]}}`),
		"empty":                    []byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`),
	}
	for _, q := range buildQueries(60e9, nil) {
		bodies[q.name] = mustJSON(t, map[string]any{"status": "success",
			"data": map[string]any{"resultType": "vector", "result": vectorFor(q, pods)}})
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			status, resultType, want, err := referenceDecode(body)
			require.NoError(t, err)
			got, err := decodeQueryResponse(body)
			require.NoError(t, err)
			assert.Equal(t, status, got.status)
			assert.Equal(t, resultType, got.resultType)
			assertSameSamples(t, want, got.samples)
		})
	}
	got, err := decodeQueryResponse([]byte(richResponse))
	require.NoError(t, err)
	assert.Equal(t, []string{"careful"}, got.warnings)
	assert.Equal(t, "a\"b", got.samples[0].namespace)
	assert.Equal(t, "pé😀", got.samples[0].pod)
}

func TestDecodeErrorResponse(t *testing.T) {
	r, err := decodeQueryResponse([]byte(`{"status":"error","errorType":"bad_data","error":"parse error at char 5","data":null}`))
	require.NoError(t, err)
	assert.Equal(t, queryResponse{status: "error", errorType: "bad_data", errMsg: "parse error at char 5"}, r)
}

func TestDecodeMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, body, wantErr string
	}{
		{"empty", ``, "unexpected end"},
		{"not JSON", `<html>bad gateway</html>`, `found '<', want '{'`},
		{"trailing data", `{"status":"success"} x`, "data after the response object"},
		{"unterminated string", `{"status":"succ`, "unterminated string"},
		{"bad value", `{"data":{"resultType":"vector","result":[{"metric":{},"value":[1,"one"]}]}}`, `sample value "one"`},
		{"value not a pair", `{"data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}`, "want ','"},
		{"bad number", `{"data":{"resultType":"vector","result":[{"metric":{},"value":[-,"1"]}]}}`, `bad number "-"`},
		{"label not a string", `{"data":{"resultType":"vector","result":[{"metric":{"pod":1},"value":[1,"1"]}]}}`, `want '"'`},
		{"missing colon", `{"status" "success"}`, `want ':'`},
		{"missing comma", `{"status":"a" "b":1}`, "want , or } in object"},
		{"bad literal", `{"x":nul}`, "want null"},
		{"control character", "{\"x\":\"a\nb\"}", "control character in string"},
		{"bad escape", `{"data":{"resultType":"vector","result":[{"metric":{"pod":"\q"},"value":[1,"1"]}]}}`, "string:"},
		{"too deep", `{"x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`, "nested too deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeQueryResponse([]byte(tc.body))
			require.Error(t, err)
			assert.ErrorContains(t, err, "bad response JSON at byte")
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// FuzzDecodeQueryResponse checks that the decoder never panics and, on the
// canonical form of any JSON input (re-encoded by encoding/json, so without
// duplicate keys), agrees with the client's decoder on every float sample
// of a vector both accept.
func FuzzDecodeQueryResponse(f *testing.F) {
	f.Add([]byte(richResponse))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"x","le":"0.1"},"value":[1,"2"]}]}}`))
	f.Add([]byte(`{"status":"error","errorType":"bad_data","error":"x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = decodeQueryResponse(body)
		var v any
		if json.Unmarshal(body, &v) != nil {
			return
		}
		canonical, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := decodeQueryResponse(canonical)
		if err != nil || got.resultType != "vector" {
			return
		}
		_, resultType, want, refErr := referenceDecode(canonical)
		if refErr != nil || resultType != "vector" {
			return
		}
		assertSameSamples(t, want, got.samples)
	})
}
