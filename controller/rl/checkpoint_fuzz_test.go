package rl_test

import (
	"bytes"
	"testing"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// FuzzUnmarshalCheckpoint: any bytes either decode into a checkpoint that
// encodes back to the same bytes, or are refused with an error; never a
// panic, never an allocation sized by a damaged length.
func FuzzUnmarshalCheckpoint(f *testing.F) {
	c := rl.NewCheckpoint()
	c.Put("actor/w", []float64{1, -2.5, 3e-9})
	c.Put("critic/b", nil)
	if err := c.SetMeta(map[string]int{"steps": 7}); err != nil {
		f.Fatal(err)
	}
	good, err := c.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte("AWRLCKPT"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := rl.UnmarshalCheckpoint(data)
		if err != nil {
			return
		}
		again, err := c.MarshalBinary()
		if err != nil {
			t.Fatalf("a decoded checkpoint does not encode: %v", err)
		}
		if !bytes.Equal(again, data) {
			c2, err := rl.UnmarshalCheckpoint(again)
			if err != nil {
				t.Fatalf("re-encoded checkpoint does not decode: %v", err)
			}
			if len(c2.Names()) != len(c.Names()) {
				t.Fatalf("entries %v, after a round trip %v", c.Names(), c2.Names())
			}
		}
	})
}
