package calibration_test

import (
	"encoding/json"
	"testing"

	"github.com/aware-autoscaler/aware/workloads/calibration"
)

// FuzzParse: a profile either parses into one that validates and survives
// a JSON round trip, or is refused with an error naming the profile.
func FuzzParse(f *testing.F) {
	p, err := calibration.Default()
	if err != nil {
		f.Fatal(err)
	}
	good, err := json.Marshal(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte(`{"segments": {}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := calibration.Parse("fuzz.json", data)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed but does not validate: %v", err)
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := calibration.Parse("again.json", again); err != nil {
			t.Fatalf("a parsed profile does not parse again: %v", err)
		}
	})
}
