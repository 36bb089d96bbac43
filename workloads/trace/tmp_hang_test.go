package trace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

func TestTmpHang(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for it := 0; it < 3000; it++ {
		n := r.IntN(300) + 1
		data := make([]byte, n)
		for i := range data {
			switch r.IntN(4) {
			case 0:
				data[i] = 0
			case 1:
				data[i] = byte(r.IntN(256))
			default:
				data[i] = byte(r.IntN(5))
			}
		}
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				fmt.Printf("HANG %q\n", data)
				os.Exit(1)
			}
		}()
		steps := []time.Duration{time.Second, time.Minute, time.Hour}
		s := Series{Step: steps[int(data[0])%len(steps)], Values: make([]float64, len(data)-1)}
		for i, b := range data[1:] {
			s.Values[i] = float64(b)
		}
		p, err := Fit(s)
		if err == nil {
			if _, err := Generate(p, s.Step, s.Span(), 1); err != nil {
				t.Fatal(err)
			}
		}
		close(done)
	}
}
