package segments

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestJSON2YAMLRoundTrip(t *testing.T) {
	for _, size := range cpuSizes(t, "json2yaml") {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			inst := cpuNew(t, "json2yaml", size, cpuEnv(t, 9))
			s := inst.(json2yamlSeg)
			require.Len(t, s.doc, size)
			out, values, err := s.convert()
			require.NoError(t, err)
			assert.NotEqual(t, byte('{'), out[0], "output should be block YAML, not JSON")

			back, err := yaml.YAMLToJSON(out)
			require.NoError(t, err)
			assert.JSONEq(t, string(s.doc), string(back), "YAML → JSON must give the original document")

			var v any
			require.NoError(t, json.Unmarshal(s.doc, &v))
			assert.Equal(t, countJSONValues(v), values)
		})
	}
}

func TestCountJSONValues(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want int
	}{
		{`1`, 1},
		{`[]`, 1},
		{`{"a":[1,2,{"b":null}],"c":"x"}`, 7},
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(tc.doc), &v))
		assert.Equal(t, tc.want, countJSONValues(v), tc.doc)
	}
}

func TestJSON2YAMLRejectsInvalidJSON(t *testing.T) {
	_, _, err := json2yamlSeg{doc: []byte(`{"a":`)}.convert()
	assert.ErrorContains(t, err, "json2yaml: parse JSON")
}
