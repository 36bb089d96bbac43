package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const auditSample = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/pods?limit=500","verb":"list","user":{"username":"ctl","groups":["system:authenticated"]},"objectRef":{"resource":"pods","namespace":"a","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-28T12:00:01.000000Z","stageTimestamp":"2026-11-28T12:00:01.010000Z","annotations":{"authorization.k8s.io/decision":"allow"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"2","stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/a/deployments/d/scale","verb":"update","user":{"username":"ctl"},"objectRef":{"resource":"deployments","subresource":"scale","namespace":"a","name":"d","apiGroup":"apps","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","reason":"Forbidden","code":403},"requestReceivedTimestamp":"2026-11-28T12:00:00.500000Z","stageTimestamp":"2026-11-28T12:00:00.501000Z","annotations":{"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":""}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"3","stage":"ResponseComplete","requestURI":"/version","verb":"get","user":{"username":"other"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-28T12:00:02Z","stageTimestamp":"2026-11-28T12:00:02Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"4","stage":"ResponseStarted","requestURI":"/api/v1/pods?watch=1","verb":"watch","user":{"username":"ctl"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-28T12:00:03Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"5","stage":"ResponseCo`

func TestAuditReadsEventsAndForbidden(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{dir: dir}
	_, err := c.Audit("")
	require.ErrorContains(t, err, "no audit log")

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o700))
	// A rotated backup holds the oldest event; the live log ends mid-line
	// (an API server killed while writing).
	backup := `{"stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/configmaps/x","verb":"delete","user":{"username":"ctl"},"objectRef":{"resource":"configmaps","namespace":"a","name":"x"},"responseStatus":{"code":403},"requestReceivedTimestamp":"2026-11-28T11:59:00Z","annotations":{"authorization.k8s.io/reason":"no rule"}}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "audit-2026-11-28T11-59-30.000.log"), []byte(backup), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "audit.log"), []byte(auditSample), 0o600))

	all, err := c.Audit("ctl")
	require.NoError(t, err)
	require.Len(t, all, 3, "the other user, the ResponseStarted stage and the broken last line are left out")
	assert.Equal(t, "configmaps", all[0].Resource, "oldest first, across files")
	assert.Equal(t, "deployments/scale", all[1].Resource)
	assert.Equal(t, AuditEvent{User: "ctl", Verb: "list", Resource: "pods", Namespace: "a", URI: "/api/v1/namespaces/a/pods?limit=500",
		Code: 200, At: time.Date(2026, 11, 28, 12, 0, 1, 0, time.UTC)}, all[2])

	refused, err := c.Forbidden("ctl")
	require.NoError(t, err)
	require.Len(t, refused, 2)
	assert.Equal(t, "no rule", refused[0].Reason)
	assert.Equal(t, "ctl update apps/deployments/scale a/d -> 403 at 2026-11-28T12:00:00.5Z", refused[1].String())
	assert.Equal(t, "ctl delete configmaps a/x -> 403 at 2026-11-28T11:59:00Z (no rule)", refused[0].String())
	assert.Equal(t, "ctl list pods in namespace a -> 200 at 2026-11-28T12:00:01Z", all[2].String())

	assert.Equal(t, []Permission{{"", "configmaps", "delete"}, {"", "pods", "list"}, {"apps", "deployments/scale", "update"}}, Used(all))

	everyone, err := c.Audit("")
	require.NoError(t, err)
	assert.Len(t, everyone, 4)

	// A broken line that is not the last is an error naming the file and line.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "audit.log"), []byte("{\n"+auditSample), 0o600))
	_, err = c.Audit("")
	require.ErrorContains(t, err, "audit.log line 1")
}
