package app

import (
	"embed"
	"fmt"
	"path"
)

//go:embed examples/*.yaml
var examples embed.FS

// Example returns a built-in example application by name ("mixed", "light"),
// the same as the file workloads/app/examples/NAME.yaml.
func Example(name string) (Spec, error) {
	file := path.Join("examples", name+".yaml")
	data, err := examples.ReadFile(file)
	if err != nil {
		return Spec{}, fmt.Errorf("example app %q: not built in", name)
	}
	return Parse(file, data)
}
