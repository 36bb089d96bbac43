package metalearn

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// writeReport writes a report into dir (made if missing): md into the
// file mdName and v, indented JSON, into jsonName.
func writeReport(dir, mdName, md, jsonName string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, mdName), []byte(md), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, jsonName), js, 0o644)
}
