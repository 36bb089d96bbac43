package app_test

import (
	"os"
	"testing"

	"github.com/aware-autoscaler/aware/workloads/app"
)

// FuzzParse: an application spec either parses or is refused with an
// error; never a panic.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"examples/light.yaml", "examples/mixed.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("segments: [{"))
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := app.Parse("fuzz.yaml", data); err != nil && err.Error() == "" {
			t.Fatal("an error without a message")
		}
	})
}
