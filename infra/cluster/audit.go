package cluster

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// auditPolicy records every request of the users the control plane does not
// run itself, at Metadata level (who, what, the answer's code; no bodies),
// once when its response completes. The control plane's own components, the
// admin (system:masters) and service accounts (the controller-manager's
// controllers) are left out: the log is for components under test, which
// connect with a UserKubeconfig.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  userGroups: ["system:masters", "system:serviceaccounts", "system:nodes"]
- level: None
  users: ["system:kube-controller-manager", "system:kube-scheduler", "system:apiserver", "system:kube-proxy"]
- level: Metadata
`

// Audit log rotation: a request is a few hundred bytes, so this holds
// millions, and a long run cannot fill the disk.
const (
	auditLogName     = "audit.log"
	auditMaxSizeMB   = 200
	auditMaxBackups  = 4
	auditMaxLineSize = 1 << 20
)

// auditArgs are the kube-apiserver flags that write the audit log of the
// policy at policyPath into dir/logs.
func (c *Cluster) auditArgs(policyPath string) []string {
	return []string{
		"--audit-policy-file=" + policyPath,
		"--audit-log-path=" + filepath.Join(c.dir, "logs", auditLogName),
		"--audit-log-format=json",
		fmt.Sprintf("--audit-log-maxsize=%d", auditMaxSizeMB),
		fmt.Sprintf("--audit-log-maxbackup=%d", auditMaxBackups),
	}
}

// AuditEvent is one request of the audit log, reduced to what a check of
// permissions reads.
type AuditEvent struct {
	User      string    // the requester's user name
	Verb      string    // get, list, watch, create, update, patch, delete, …
	Resource  string    // e.g. "leases", "pods/resize", "multidimpodautoscalers/status"; empty for a non-resource URL
	Group     string    // the API group ("" for core)
	Namespace string    // "" for cluster-scoped requests
	Name      string    // the object's name, when the request names one
	URI       string    // the request URI
	Code      int       // the HTTP status code of the answer
	Reason    string    // the authorizer's reason for a refusal, if it gave one
	At        time.Time // when the API server received the request
}

// String formats the event as "user verb group/resource namespace/name ->
// code at time (reason)".
func (e AuditEvent) String() string {
	res := e.Resource
	if e.Group != "" {
		res = e.Group + "/" + res
	}
	if res == "" {
		res = e.URI
	}
	switch {
	case e.Name != "" && e.Namespace != "":
		res += " " + e.Namespace + "/" + e.Name
	case e.Name != "":
		res += " " + e.Name
	case e.Namespace != "":
		res += " in namespace " + e.Namespace
	}
	s := fmt.Sprintf("%s %s %s -> %d at %s", e.User, e.Verb, res, e.Code, e.At.UTC().Format(time.RFC3339Nano))
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}

// auditLine is the part of an audit.k8s.io/v1 Event that AuditEvent keeps.
type auditLine struct {
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Annotations              map[string]string `json:"annotations"`
	RequestReceivedTimestamp time.Time         `json:"requestReceivedTimestamp"`
}

// Audit returns the requests of user (every audited user if "") that the
// API server answered, oldest first, from the audit log and its rotated
// backups. Only users outside the control plane are audited (not the
// admin, system:masters, service accounts or the control plane's own
// components): run a component under test with a UserKubeconfig.
func (c *Cluster) Audit(user string) ([]AuditEvent, error) {
	logs := filepath.Join(c.dir, "logs")
	files, err := filepath.Glob(filepath.Join(logs, strings.TrimSuffix(auditLogName, ".log")+"-*.log"))
	if err != nil {
		return nil, fmt.Errorf("cluster: audit log: %w", err)
	}
	files = append(files, filepath.Join(logs, auditLogName))
	var out []AuditEvent
	found := false
	for _, f := range files {
		evs, err := readAudit(f, user)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		found = true
		out = append(out, evs...)
	}
	if !found {
		return nil, fmt.Errorf("cluster: no audit log in %s: the control plane was started before auditing existed; run `aware cluster down` and up again", logs)
	}
	slices.SortStableFunc(out, func(a, b AuditEvent) int { return a.At.Compare(b.At) })
	return out, nil
}

// Forbidden returns the requests of user that the API server refused with
// 403 Forbidden, oldest first (see Audit).
func (c *Cluster) Forbidden(user string) ([]AuditEvent, error) {
	evs, err := c.Audit(user)
	if err != nil {
		return nil, err
	}
	return Refused(evs), nil
}

// Refused returns the events the API server answered with 403 Forbidden,
// in their order (events is left as it is).
func Refused(events []AuditEvent) []AuditEvent {
	return slices.DeleteFunc(slices.Clone(events), func(e AuditEvent) bool { return e.Code != http.StatusForbidden })
}

// readAudit reads the events of user ("" for all) from one audit log file.
func readAudit(path, user string) ([]AuditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), auditMaxLineSize)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var l auditLine
		if err := json.Unmarshal(line, &l); err != nil {
			// The API server may be killed mid-line (a fault test): a
			// broken last line is not an error.
			if !sc.Scan() {
				break
			}
			return nil, fmt.Errorf("cluster: audit log %s line %d: %w", path, n, err)
		}
		if l.Stage != "ResponseComplete" && l.Stage != "Panic" {
			continue
		}
		if user != "" && l.User.Username != user {
			continue
		}
		e := AuditEvent{User: l.User.Username, Verb: l.Verb, URI: l.RequestURI, At: l.RequestReceivedTimestamp,
			Reason: l.Annotations["authorization.k8s.io/reason"]}
		if l.ResponseStatus != nil {
			e.Code = l.ResponseStatus.Code
		}
		if r := l.ObjectRef; r != nil {
			e.Resource, e.Group, e.Namespace, e.Name = r.Resource, r.APIGroup, r.Namespace, r.Name
			if r.Subresource != "" {
				e.Resource += "/" + r.Subresource
			}
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cluster: audit log %s: %w", path, err)
	}
	return out, nil
}

// Permission is what one request needed: a verb on a resource of a group.
type Permission struct{ Group, Resource, Verb string }

// Used returns the distinct permissions of events, sorted: compare them with
// a role's rules to find grants nothing used.
func Used(events []AuditEvent) []Permission {
	var out []Permission
	for _, e := range events {
		if e.Resource == "" {
			continue
		}
		out = append(out, Permission{e.Group, e.Resource, e.Verb})
	}
	slices.SortFunc(out, func(a, b Permission) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
	return slices.Compact(out)
}
