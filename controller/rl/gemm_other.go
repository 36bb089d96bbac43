//go:build !amd64 || purego

package rl

func kernel4x24(k int, a *float64, rs, ps int, b, c *float64, ldc int, add bool) {
	panic("rl: no packed gemm kernel on this architecture")
}

func kernel4x12(k int, a *float64, rs, ps int, b, c *float64, ldc int, add bool) {
	panic("rl: no packed gemm kernel on this architecture")
}

func avx512Supported() bool { return false }

func avx2Supported() bool { return false }

func sigmoidVec(x *float64, n int) { panic("rl: no vector gates on this architecture") }

func tanhVec(x *float64, n int) { panic("rl: no vector gates on this architecture") }

func reluVec(x *float64, n int) { panic("rl: no vector ReLU on this architecture") }

func reluBackVec(dz, dy, y *float64, n int) { panic("rl: no vector ReLU on this architecture") }
