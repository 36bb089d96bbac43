package rl

import "fmt"

// ConcatRows writes the rows [x_k, y_k] of a batch into dst (batch×(nx+ny)):
// the forward pass of concatenating, for example, a state with an action
// (the critic's input) or with an embedding vector (the meta learner's
// input). x is batch×nx and y is batch×ny; a y of exactly ny values is
// repeated on every row.
func ConcatRows(dst, x, y []float64, batch, nx, ny int) {
	w := nx + ny
	if batch <= 0 || len(dst) != batch*w || len(x) != batch*nx || (len(y) != batch*ny && len(y) != ny) {
		panic(fmt.Sprintf("rl: ConcatRows: dst %d, x %d, y %d for batch %d of %d+%d", len(dst), len(x), len(y), batch, nx, ny))
	}
	shared := len(y) == ny && batch > 1
	for k := range batch {
		copy(dst[k*w:k*w+nx], x[k*nx:(k+1)*nx])
		if shared {
			copy(dst[k*w+nx:(k+1)*w], y)
		} else {
			copy(dst[k*w+nx:(k+1)*w], y[k*ny:(k+1)*ny])
		}
	}
}

// SplitRows is the backward pass of ConcatRows: it splits the gradient g
// (batch×(nx+ny)) into dx (batch×nx) and dy. A dy of exactly ny values
// receives the sum over rows, the gradient of a y shared by every row. A nil
// dx or dy is skipped.
func SplitRows(dx, dy, g []float64, batch, nx, ny int) {
	w := nx + ny
	if batch <= 0 || len(g) != batch*w || (dx != nil && len(dx) != batch*nx) || (dy != nil && len(dy) != batch*ny && len(dy) != ny) {
		panic(fmt.Sprintf("rl: SplitRows: dx %d, dy %d, g %d for batch %d of %d+%d", len(dx), len(dy), len(g), batch, nx, ny))
	}
	shared := dy != nil && len(dy) == ny && batch > 1
	if shared {
		clear(dy)
	}
	for k := range batch {
		if dx != nil {
			copy(dx[k*nx:(k+1)*nx], g[k*w:k*w+nx])
		}
		switch {
		case shared:
			for j, v := range g[k*w+nx : (k+1)*w] {
				dy[j] += v
			}
		case dy != nil:
			copy(dy[k*ny:(k+1)*ny], g[k*w+nx:(k+1)*w])
		}
	}
}
