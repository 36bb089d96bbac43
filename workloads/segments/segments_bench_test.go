package segments

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// BenchmarkSegments runs every registered segment that needs no external
// service at each of its sizes, e.g. compress/size=131072. Throughput is
// reported in bytes (the larger of BytesIn and BytesOut) and, where a segment
// counts operations, in Mops/s.
func BenchmarkSegments(b *testing.B) {
	ctx := context.Background()
	for _, name := range Names() {
		info, _ := Lookup(name)
		needsService := slices.Contains(info.Needs, "objects") || slices.Contains(info.Needs, "db")
		for _, size := range info.Sizes {
			b.Run(fmt.Sprintf("%s/size=%d", name, size), func(b *testing.B) {
				if needsService {
					b.Skipf("%s needs %v, which this benchmark does not provide", name, info.Needs)
				}
				inst, err := New(ctx, Spec{Name: name, Size: size}, Env{Dir: b.TempDir(), Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					if err := inst.Close(ctx); err != nil {
						b.Error(err)
					}
				}()
				r, err := inst.Run(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if n := max(r.BytesIn, r.BytesOut); n > 0 {
					b.SetBytes(n)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := inst.Run(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if r.Ops > 0 && name != "sleep" { // sleep's Ops are milliseconds
					b.ReportMetric(float64(r.Ops)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mops/s")
				}
			})
		}
	}
}
