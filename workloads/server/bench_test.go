package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// BenchmarkInvoke measures the handler's overhead per request around a
// no-op application.
func BenchmarkInvoke(b *testing.B) {
	noop := &fakeApp{run: func(context.Context) (segments.Result, error) { return segments.Result{Items: 1}, nil }}
	for _, bc := range []struct {
		name        string
		maxInFlight int
	}{{"unlimited", 0}, {"limited", 1 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := New(Config{App: "bench", MaxInFlight: bc.maxInFlight}, setupOf(noop),
				WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				b.Fatal(err)
			}
			s.h.setRunner(noop)
			h := s.Handler()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/invoke", nil))
					if w.Code != http.StatusOK {
						b.Fatalf("status %d", w.Code)
					}
				}
			})
		})
	}
}
