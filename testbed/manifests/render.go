package manifests

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Set is one component's objects, in the order they are applied.
type Set struct {
	Component string
	Objects   []client.Object
}

// Build returns the testbed's objects by component, in dependency order:
// namespaces, the MPA CRD and controller, the databases and monitoring,
// the apps, their load and the dashboards. o must have been through
// WithDefaults; c is needed with the external services only.
func Build(o Options, c Credentials) ([]Set, error) {
	mpa, err := MPA(o)
	if err != nil {
		return nil, err
	}
	sets := []Set{{ComponentNamespaces, Namespaces(o)}, {ComponentMPA, mpa}}
	if o.Components.TrajectoryDB {
		sets = append(sets, Set{ComponentTrajectoryDB, TrajectoryDB(o)})
	}
	if o.Components.ExternalServices {
		ext, err := ExternalServices(o, c)
		if err != nil {
			return nil, err
		}
		sets = append(sets, Set{ComponentExternalServices, ext})
	}
	if o.Components.Monitoring {
		sets = append(sets, Set{ComponentMonitoring, Monitoring(o)})
	}
	apps, err := Apps(o)
	if err != nil {
		return nil, err
	}
	sets = append(sets, Set{ComponentApps, apps})
	if o.Components.Load {
		sets = append(sets, Set{ComponentLoad, Load(o)})
	}
	if o.Components.Dashboards {
		sets = append(sets, Set{ComponentDashboards, Dashboards(o)})
	}
	return sets, nil
}

// Key names an object uniquely in a testbed: kind, namespace (if any) and
// name, e.g. "Deployment/aware-system/aware-controller".
func Key(obj client.Object) string {
	parts := []string{GVK(obj).Kind}
	if ns := obj.GetNamespace(); ns != "" {
		parts = append(parts, ns)
	}
	return strings.Join(append(parts, obj.GetName()), "/")
}

// WriteYAML writes the sets as one multi-document YAML stream, each
// component introduced by a comment; empty status fields are left out.
func WriteYAML(w io.Writer, sets []Set) error {
	var buf bytes.Buffer
	for _, s := range sets {
		for i, obj := range s.Objects {
			if buf.Len() > 0 {
				buf.WriteString("---\n")
			}
			if i == 0 {
				fmt.Fprintf(&buf, "# component: %s\n", s.Component)
			}
			m, err := ToMap(obj)
			if err != nil {
				return err
			}
			y, err := yaml.Marshal(m)
			if err != nil {
				return fmt.Errorf("manifests: %s: %w", Key(obj), err)
			}
			buf.Write(y)
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}
