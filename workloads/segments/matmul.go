package segments

import (
	"context"

	"gonum.org/v1/gonum/mat"
)

func init() {
	Register(Info{
		Name: "matMul",
		Unit: "matrix side",
		// 50 → 150 is the matrix instability scenario.
		Sizes: []int{25, 50, 75, 100, 125, 150},
		New: func(_ context.Context, size int, env Env) (Instance, error) {
			return newMatMul(size, env)
		},
	})
}

func newMatMul(size int, env Env) (matMulSeg, error) {
	if err := checkMax(size, maxMatrixSide, "rows"); err != nil {
		return matMulSeg{}, err
	}
	r := inputRand(env, "matMul")
	a := genMatrix(r, size)
	return matMulSeg{n: size, a: a, b: genMatrix(r, size)}, nil
}

// matMulSeg multiplies two generated dense n×n matrices per request with
// gonum (Sizeless' matrix multiplication). Inputs are only read, so
// concurrent requests share them; each request allocates its product.
type matMulSeg struct {
	n    int
	a, b *mat.Dense
}

// product returns a·b.
func (s matMulSeg) product() *mat.Dense {
	c := mat.NewDense(s.n, s.n, nil)
	c.Mul(s.a, s.b)
	return c
}

func (s matMulSeg) Run(ctx context.Context) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	c := s.product()
	n := int64(s.n)
	return Result{
		BytesIn:  2 * 8 * n * n,
		BytesOut: 8 * n * n,
		Items:    n * n,
		Ops:      2 * n * n * n,
		Checksum: digestFloats(c.RawMatrix().Data),
	}, nil
}

func (matMulSeg) Close(context.Context) error { return nil }
