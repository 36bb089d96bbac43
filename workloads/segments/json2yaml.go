package segments

import (
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

func init() {
	Register(Info{
		Name: "json2yaml",
		Unit: "bytes of JSON",
		// [250, 500, 1000] → [2000, 3000, 5000] is the JSON instability scenario.
		Sizes: []int{250, 500, 1000, 2000, 3000, 5000},
		New: func(_ context.Context, size int, env Env) (Instance, error) {
			if err := checkMax(size, maxJSONBytes, "bytes"); err != nil {
				return nil, err
			}
			doc, err := genJSON(inputRand(env, "json2yaml"), size)
			if err != nil {
				return nil, err
			}
			return json2yamlSeg{doc: doc}, nil
		},
	})
}

// json2yamlSeg converts a generated JSON document to YAML per request, like
// Sizeless' yaml.dump(JSON.parse(s)): the document is parsed with
// encoding/json and the parsed value is emitted as YAML (keys sorted, so the
// output is deterministic). Items counts the JSON values parsed.
type json2yamlSeg struct{ doc []byte }

// convert parses doc and returns its YAML form and the number of JSON values.
func (s json2yamlSeg) convert() ([]byte, int, error) {
	var v any
	if err := json.Unmarshal(s.doc, &v); err != nil {
		return nil, 0, fmt.Errorf("json2yaml: parse JSON: %w", err)
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return nil, 0, fmt.Errorf("json2yaml: emit YAML: %w", err)
	}
	return out, countJSONValues(v), nil
}

func (s json2yamlSeg) Run(ctx context.Context) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	out, values, err := s.convert()
	if err != nil {
		return Result{}, err
	}
	return Result{
		BytesIn:  int64(len(s.doc)),
		BytesOut: int64(len(out)),
		Items:    int64(values),
		Checksum: digest(out),
	}, nil
}

func (json2yamlSeg) Close(context.Context) error { return nil }

// countJSONValues counts v and every value nested in it.
func countJSONValues(v any) int {
	n := 1
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			n += countJSONValues(e)
		}
	case []any:
		for _, e := range t {
			n += countJSONValues(e)
		}
	}
	return n
}
