package rl

// Small-matrix kernels for Dense layers. All matrices are row-major and
// contiguous (leading dimension = number of columns). Each kernel computes a
// 4×4 block of the result in registers, streaming contiguous memory, and falls
// back to narrower blocks at the edges. They allocate nothing.

// kernelMaxOut is the widest layer output for which Dense uses these kernels.
// gonum's Dgemm streams rows through SIMD axpy/dot calls whose per-call cost
// dominates when a row has only a few outputs (40→3 at batch 64: 16 µs against
// 4 µs here); from about 8 outputs on, its SSE2 loops beat scalar Go (40→40 at
// batch 64: 29 µs against 46 µs), so wider layers go to gemm (gemm.go: the
// AVX-512 kernel, 6 µs, or gonum where that is unavailable).
const kernelMaxOut = 4

// gemmNN computes c = b0 + a·b for a (m×k), b (k×n) and c (m×n), where b0 is
// bias broadcast over rows when bias is not nil and zero otherwise. When relu
// is set, c is clamped at zero afterwards.
func gemmNN(m, n, k int, a, b, c, bias []float64, relu bool) {
	a = a[:m*k]
	b = b[:k*n]
	c = c[:m*n]
	var zero [4]float64
	i := 0
	for ; i+4 <= m; i += 4 {
		a0 := a[i*k : i*k+k]
		a1 := a[(i+1)*k : (i+1)*k+k]
		a2 := a[(i+2)*k : (i+2)*k+k]
		a3 := a[(i+3)*k : (i+3)*k+k]
		j := 0
		for ; j+4 <= n; j += 4 {
			bb := zero[:]
			if bias != nil {
				bb = bias[j : j+4]
			}
			c00, c01, c02, c03 := bb[0], bb[1], bb[2], bb[3]
			c10, c11, c12, c13 := c00, c01, c02, c03
			c20, c21, c22, c23 := c00, c01, c02, c03
			c30, c31, c32, c33 := c00, c01, c02, c03
			for p, x0 := range a0 {
				w := b[p*n+j : p*n+j+4]
				w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
				c00 += x0 * w0
				c01 += x0 * w1
				c02 += x0 * w2
				c03 += x0 * w3
				x1 := a1[p]
				c10 += x1 * w0
				c11 += x1 * w1
				c12 += x1 * w2
				c13 += x1 * w3
				x2 := a2[p]
				c20 += x2 * w0
				c21 += x2 * w1
				c22 += x2 * w2
				c23 += x2 * w3
				x3 := a3[p]
				c30 += x3 * w0
				c31 += x3 * w1
				c32 += x3 * w2
				c33 += x3 * w3
			}
			store4(c[i*n+j:], c00, c01, c02, c03, relu)
			store4(c[(i+1)*n+j:], c10, c11, c12, c13, relu)
			store4(c[(i+2)*n+j:], c20, c21, c22, c23, relu)
			store4(c[(i+3)*n+j:], c30, c31, c32, c33, relu)
		}
		for ; j < n; j++ {
			var c0 float64
			if bias != nil {
				c0 = bias[j]
			}
			c1, c2, c3 := c0, c0, c0
			for p, x0 := range a0 {
				w := b[p*n+j]
				c0 += x0 * w
				c1 += a1[p] * w
				c2 += a2[p] * w
				c3 += a3[p] * w
			}
			if relu {
				c0, c1, c2, c3 = max(c0, 0), max(c1, 0), max(c2, 0), max(c3, 0)
			}
			c[i*n+j] = c0
			c[(i+1)*n+j] = c1
			c[(i+2)*n+j] = c2
			c[(i+3)*n+j] = c3
		}
	}
	for ; i < m; i++ {
		a0 := a[i*k : i*k+k]
		j := 0
		for ; j+4 <= n; j += 4 {
			bb := zero[:]
			if bias != nil {
				bb = bias[j : j+4]
			}
			c0, c1, c2, c3 := bb[0], bb[1], bb[2], bb[3]
			for p, x := range a0 {
				w := b[p*n+j : p*n+j+4]
				c0 += x * w[0]
				c1 += x * w[1]
				c2 += x * w[2]
				c3 += x * w[3]
			}
			store4(c[i*n+j:], c0, c1, c2, c3, relu)
		}
		for ; j < n; j++ {
			var s float64
			if bias != nil {
				s = bias[j]
			}
			for p, x := range a0 {
				s += x * b[p*n+j]
			}
			if relu {
				s = max(s, 0)
			}
			c[i*n+j] = s
		}
	}
}

func store4(c []float64, c0, c1, c2, c3 float64, relu bool) {
	c = c[:4]
	if relu {
		c0, c1, c2, c3 = max(c0, 0), max(c1, 0), max(c2, 0), max(c3, 0)
	}
	c[0], c[1], c[2], c[3] = c0, c1, c2, c3
}

// gemmTN computes c += aᵀ·b for a (k×m), b (k×n) and c (m×n): the weight
// gradient dW += xᵀ·dz with k the batch size.
func gemmTN(m, n, k int, a, b, c []float64) {
	a = a[:k*m]
	b = b[:k*n]
	c = c[:m*n]
	i := 0
	for ; i+4 <= m; i += 4 {
		j := 0
		for ; j+4 <= n; j += 4 {
			var c00, c01, c02, c03, c10, c11, c12, c13 float64
			var c20, c21, c22, c23, c30, c31, c32, c33 float64
			for p := 0; p < k; p++ {
				x := a[p*m+i : p*m+i+4]
				w := b[p*n+j : p*n+j+4]
				w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
				x0 := x[0]
				c00 += x0 * w0
				c01 += x0 * w1
				c02 += x0 * w2
				c03 += x0 * w3
				x1 := x[1]
				c10 += x1 * w0
				c11 += x1 * w1
				c12 += x1 * w2
				c13 += x1 * w3
				x2 := x[2]
				c20 += x2 * w0
				c21 += x2 * w1
				c22 += x2 * w2
				c23 += x2 * w3
				x3 := x[3]
				c30 += x3 * w0
				c31 += x3 * w1
				c32 += x3 * w2
				c33 += x3 * w3
			}
			add4(c[i*n+j:], c00, c01, c02, c03)
			add4(c[(i+1)*n+j:], c10, c11, c12, c13)
			add4(c[(i+2)*n+j:], c20, c21, c22, c23)
			add4(c[(i+3)*n+j:], c30, c31, c32, c33)
		}
		for ; j < n; j++ {
			var c0, c1, c2, c3 float64
			for p := 0; p < k; p++ {
				x := a[p*m+i : p*m+i+4]
				w := b[p*n+j]
				c0 += x[0] * w
				c1 += x[1] * w
				c2 += x[2] * w
				c3 += x[3] * w
			}
			c[i*n+j] += c0
			c[(i+1)*n+j] += c1
			c[(i+2)*n+j] += c2
			c[(i+3)*n+j] += c3
		}
	}
	for ; i < m; i++ {
		j := 0
		for ; j+4 <= n; j += 4 {
			var c0, c1, c2, c3 float64
			for p := 0; p < k; p++ {
				x := a[p*m+i]
				w := b[p*n+j : p*n+j+4]
				c0 += x * w[0]
				c1 += x * w[1]
				c2 += x * w[2]
				c3 += x * w[3]
			}
			add4(c[i*n+j:], c0, c1, c2, c3)
		}
		for ; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				s += a[p*m+i] * b[p*n+j]
			}
			c[i*n+j] += s
		}
	}
}

func add4(c []float64, c0, c1, c2, c3 float64) {
	c = c[:4]
	c[0] += c0
	c[1] += c1
	c[2] += c2
	c[3] += c3
}

// gemmNT computes c = a·bᵀ for a (m×k), b (n×k) and c (m×n): the input
// gradient dx = dz·Wᵀ with W stored In×Out (n = In, k = Out).
func gemmNT(m, n, k int, a, b, c []float64) {
	a = a[:m*k]
	b = b[:n*k]
	c = c[:m*n]
	i := 0
	for ; i+4 <= m; i += 4 {
		a0 := a[i*k : i*k+k]
		a1 := a[(i+1)*k : (i+1)*k+k]
		a2 := a[(i+2)*k : (i+2)*k+k]
		a3 := a[(i+3)*k : (i+3)*k+k]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0 := b[j*k : j*k+k]
			b1 := b[(j+1)*k : (j+1)*k+k]
			b2 := b[(j+2)*k : (j+2)*k+k]
			b3 := b[(j+3)*k : (j+3)*k+k]
			var c00, c01, c02, c03, c10, c11, c12, c13 float64
			var c20, c21, c22, c23, c30, c31, c32, c33 float64
			for p, w0 := range b0 {
				w1, w2, w3 := b1[p], b2[p], b3[p]
				x0 := a0[p]
				c00 += x0 * w0
				c01 += x0 * w1
				c02 += x0 * w2
				c03 += x0 * w3
				x1 := a1[p]
				c10 += x1 * w0
				c11 += x1 * w1
				c12 += x1 * w2
				c13 += x1 * w3
				x2 := a2[p]
				c20 += x2 * w0
				c21 += x2 * w1
				c22 += x2 * w2
				c23 += x2 * w3
				x3 := a3[p]
				c30 += x3 * w0
				c31 += x3 * w1
				c32 += x3 * w2
				c33 += x3 * w3
			}
			store4(c[i*n+j:], c00, c01, c02, c03, false)
			store4(c[(i+1)*n+j:], c10, c11, c12, c13, false)
			store4(c[(i+2)*n+j:], c20, c21, c22, c23, false)
			store4(c[(i+3)*n+j:], c30, c31, c32, c33, false)
		}
		for ; j < n; j++ {
			b0 := b[j*k : j*k+k]
			var c0, c1, c2, c3 float64
			for p, w := range b0 {
				c0 += a0[p] * w
				c1 += a1[p] * w
				c2 += a2[p] * w
				c3 += a3[p] * w
			}
			c[i*n+j] = c0
			c[(i+1)*n+j] = c1
			c[(i+2)*n+j] = c2
			c[(i+3)*n+j] = c3
		}
	}
	for ; i < m; i++ {
		a0 := a[i*k : i*k+k]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0 := b[j*k : j*k+k]
			b1 := b[(j+1)*k : (j+1)*k+k]
			b2 := b[(j+2)*k : (j+2)*k+k]
			b3 := b[(j+3)*k : (j+3)*k+k]
			var c0, c1, c2, c3 float64
			for p, x := range a0 {
				c0 += x * b0[p]
				c1 += x * b1[p]
				c2 += x * b2[p]
				c3 += x * b3[p]
			}
			store4(c[i*n+j:], c0, c1, c2, c3, false)
		}
		for ; j < n; j++ {
			b0 := b[j*k : j*k+k]
			var s float64
			for p, x := range a0 {
				s += x * b0[p]
			}
			c[i*n+j] = s
		}
	}
}
