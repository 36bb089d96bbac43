package extending_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// imagePipeline is an application family of our own: a thumbnail service
// that resizes an image, compresses it and, half the time, rotates it
// first, each step at a calibrated size of its own.
func init() {
	generator.RegisterFamily(generator.Family{Name: "image-pipeline",
		Chain: func(r *rand.Rand, maxSegments int, calibrated map[string][]int) ([]segments.Spec, error) {
			step := func(name string) (segments.Spec, error) {
				sizes := calibrated[name]
				if len(sizes) == 0 {
					return segments.Spec{}, fmt.Errorf("the profile has no %s entry", name)
				}
				return segments.Spec{Name: name, Size: sizes[r.IntN(len(sizes))]}, nil
			}
			names := []string{"imageResize", "imageCompress"}
			if maxSegments > 2 && r.IntN(2) == 0 {
				names = append([]string{"imageRotate"}, names...)
			}
			var chain []segments.Spec
			for _, n := range names {
				s, err := step(n)
				if err != nil {
					return nil, err
				}
				chain = append(chain, s)
			}
			return chain, nil
		}})
	generator.RegisterFamily(generator.Family{Name: "one-chain",
		Chain: func(*rand.Rand, int, map[string][]int) ([]segments.Spec, error) {
			return []segments.Spec{{Name: "matMul", Size: 50}}, nil
		}})
	generator.RegisterFamily(generator.Family{Name: "uncalibrated",
		Chain: func(*rand.Rand, int, map[string][]int) ([]segments.Spec, error) {
			return []segments.Spec{{Name: "matMul", Size: 7}}, nil
		}})
}

// TestFamilyFromOutside: a pool drawn a quarter from the registered family
// holds its applications, marked with it; the paper's pool (no families)
// is unchanged by the registration; unknown families and chains the
// profile cannot cost are refused by name.
func TestFamilyFromOutside(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	opts := generator.DefaultOptions()
	opts.Apps = 40
	paper, err := generator.Generate(opts, prof)
	require.NoError(t, err)

	mixed := opts
	mixed.Families = []generator.FamilyWeight{{Name: generator.Uniform, Weight: 3}, {Name: "image-pipeline", Weight: 1}}
	apps, err := generator.Generate(mixed, prof)
	require.NoError(t, err)
	n := 0
	for _, a := range apps {
		switch a.Family {
		case "image-pipeline":
			n++
			last := a.Spec.Segments[len(a.Spec.Segments)-1]
			assert.Equal(t, "imageCompress", last.Name, a.Name())
		case generator.Uniform:
		default:
			t.Errorf("%s: family %q", a.Name(), a.Family)
		}
	}
	assert.InDelta(t, 10, n, 7, "about a quarter of 40")
	for _, a := range paper {
		assert.Empty(t, a.Family)
	}
	again, err := generator.Generate(opts, prof)
	require.NoError(t, err)
	assert.Equal(t, paper, again)

	bad := opts
	bad.Families = []generator.FamilyWeight{{Name: "nope", Weight: 1}, {Name: "image-pipeline", Weight: 0}}
	_, err = generator.Generate(bad, prof)
	assert.ErrorContains(t, err, `families[0]: unknown family "nope"`)
	assert.ErrorContains(t, err, "families[1]: weight 0 must be positive")
	bad.Families = []generator.FamilyWeight{{Name: "uncalibrated", Weight: 1}}
	_, err = generator.Generate(bad, prof)
	assert.ErrorContains(t, err, "family uncalibrated")
	bad.Families = []generator.FamilyWeight{{Name: "one-chain", Weight: 1}}
	_, err = generator.Generate(bad, prof)
	assert.ErrorContains(t, err, "family one-chain drew no chain unlike the earlier apps'")
}
