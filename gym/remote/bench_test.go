package remote

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aware-autoscaler/aware/gym"
)

// BenchmarkStep measures one step over loopback HTTP through the Go
// client, against a direct step of the same environment.
func BenchmarkStep(b *testing.B) {
	ctx := context.Background()
	action := []float64{3, 0.5, 1 << 30}
	for _, tc := range []struct {
		name string
		env  func() gym.Env
	}{
		{"fake", func() gym.Env { return &fakeEnv{} }},
		{"sim", func() gym.Env { return simEnv(b) }},
	} {
		b.Run(tc.name+"/direct", func(b *testing.B) {
			env := tc.env()
			if _, _, err := env.Reset(ctx, 1); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, _, _, _, _, err := env.Step(ctx, action); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/remote", func(b *testing.B) {
			s, err := NewServer(map[string]gym.Env{"a": tc.env()}, testToken)
			if err != nil {
				b.Fatal(err)
			}
			ts := httptest.NewServer(s)
			defer ts.Close()
			c, err := Dial(ctx, ts.URL, "a", testToken)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := c.Reset(ctx, 1); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, _, _, err := c.Step(ctx, action); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
