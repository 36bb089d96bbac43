package segments

import (
	"context"
	"math"
)

func init() {
	Register(Info{
		Name: "floatOperations",
		Unit: "iterations",
		// 1e4 to ~1e7 in steps of 4, so that the ×2^8 instability scenario
		// (e.g. 10000 → 2560000) stays within the list; the largest takes about
		// 0.2 s on one core.
		Sizes: []int{10_000, 40_000, 160_000, 640_000, 2_560_000, 10_240_000},
		New: func(_ context.Context, size int, _ Env) (Instance, error) {
			if err := checkMax(size, maxFloatOps, "iterations"); err != nil {
				return nil, err
			}
			return floatOpsSeg{n: size}, nil
		},
	})
}

// floatChunk is how many iterations run between context checks.
const floatChunk = 1 << 16

// floatOpsRange adds sin(i)·cos(i) + sqrt(i) for i in [lo, hi) to acc, as
// Sizeless' floatOperations does with Math.sin, Math.cos and Math.sqrt. The
// explicit float64 conversion rounds the product, which forbids fusing it
// into an FMA, so the result does not depend on the target's instruction set.
func floatOpsRange(acc float64, lo, hi int) float64 {
	for i := lo; i < hi; i++ {
		x := float64(i)
		acc += float64(math.Sin(x)*math.Cos(x)) + math.Sqrt(x)
	}
	return acc
}

// floatOpsSeg is CPU-bound floating-point work with no input data; its result
// does not depend on the seed. The sum goes into the checksum, so the loop
// cannot be eliminated.
type floatOpsSeg struct{ n int }

func (s floatOpsSeg) Run(ctx context.Context) (Result, error) {
	acc := 0.0
	for lo := 0; lo < s.n; lo += floatChunk {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		acc = floatOpsRange(acc, lo, min(lo+floatChunk, s.n))
	}
	return Result{
		Items:    int64(s.n),
		Ops:      int64(s.n),
		Checksum: math.Float64bits(acc),
	}, nil
}

func (floatOpsSeg) Close(context.Context) error { return nil }
