package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Output is what `aware faults` does with a run's report besides printing
// its table.
type Output struct {
	// Command is how the suite was invoked, quoted above the table.
	Command string
	// Doc, when set, is a Markdown file whose <!-- faults:begin --> …
	// <!-- faults:end --> section receives the table (--doc).
	Doc string
	// Check makes a fault that lost something, acted wrongly, met a
	// refusal or crashed the controller an error (--check).
	Check bool
}

// RunTo runs the suite of cfg (Run), prints its table to out headed by
// o.Command, the date, the build's commit and the settings, writes it into
// o.Doc's faults section and, with o.Check, returns Report.Err.
func RunTo(ctx context.Context, cfg Config, o Output, out io.Writer) error {
	rep, err := Run(ctx, cfg)
	if err != nil {
		return err
	}
	var table bytes.Buffer
	fmt.Fprintf(&table, "`%s` (%s%s, %d MPAs, step %s, took %s):\n\n", o.Command, rep.Started.Format("2006-01-02"), revision(),
		rep.MPAs, rep.Step, rep.Took.Round(time.Second))
	if err := WriteTable(&table, rep); err != nil {
		return err
	}
	if _, err := out.Write(table.Bytes()); err != nil {
		return err
	}
	if o.Doc != "" {
		if err := replaceSection(o.Doc, "faults", table.String()); err != nil {
			return err
		}
	}
	if o.Check {
		return rep.Err()
	}
	return nil
}

// revision is ", commit <hash>" of the build's VCS revision, "" unknown.
func revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) < 7 {
		return ""
	}
	if dirty {
		return ", commit " + rev[:7] + " with changes"
	}
	return ", commit " + rev[:7]
}

// replaceSection replaces what lies between <!-- name:begin --> and
// <!-- name:end --> in the file at path with body, atomically (a crash
// mid-write must not lose the rest of the document), in the file a
// symbolic link at path names, keeping its permissions.
func replaceSection(path, name, body string) error {
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	i, j := bytes.Index(b, []byte(begin)), bytes.Index(b, []byte(end))
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %s … %s section", path, begin, end)
	}
	var out bytes.Buffer
	out.Write(b[:i+len(begin)])
	out.WriteString("\n")
	out.WriteString(body)
	out.Write(b[j:])
	return atomicfile.Write(path, out.Bytes(), fi.Mode().Perm())
}
