package telemetry

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/rand"
)

// generatedPodName names a pod of Deployment name as Kubernetes does: the
// ReplicaSet is <name>-<hash>, its pods get generateName <rs>-, which the
// API server cuts to 58 characters before appending 5 random ones.
func generatedPodName(name string, templateHash uint32) string {
	prefix := name + "-" + rand.SafeEncodeString(fmt.Sprint(templateHash)) + "-"
	if len(prefix) > maxGeneratedPrefix {
		prefix = prefix[:maxGeneratedPrefix]
	}
	return prefix + rand.String(5)
}

func matches(re, s string) bool { return regexp.MustCompile("^(?:" + re + ")$").MatchString(s) }

func TestDeploymentPodRegex(t *testing.T) {
	rand.Seed(1)
	for _, n := range []int{1, 3, 20, 46, 47, 50, 55, 56, 57, 58, 60, 63} {
		name := strings.Repeat("d", n-1) + "x"
		re := DeploymentPodRegex(name)
		for _, hash := range []uint32{0, 7, 12345, 4294967295} {
			pod := generatedPodName(name, hash)
			assert.True(t, matches(re, pod), "name length %d: %s should match %s", n, pod, re)
		}
	}
	for _, tc := range []struct {
		name, pod string
		want      bool
	}{
		{"web", "web-7c9f8b6d5-x2v4k", true},
		{"web", "web-5b7d9-kx2z4", true},
		{"web", "webhook-7c9f8b6d5-x2v4k", false},   // another Deployment
		{"web", "web-api-7c9f8b6d5-x2v4k", false},   // another Deployment
		{"web", "web-7c9f8b6d5-x2v4", false},        // suffix too short
		{"web", "web-7c9f8b6d5-x2v4a", false},       // vowel: not generated
		{"web", "web-0", false},                     // a StatefulSet's pod
		{"web", "web-7c9f8b6d5-x2v4k-extra", false}, // anchored
		{"a.b", "a.b-7c9f8b6d5-x2v4k", true},
		{"a.b", "axb-7c9f8b6d5-x2v4k", false}, // the dot is literal
	} {
		assert.Equal(t, tc.want, matches(DeploymentPodRegex(tc.name), tc.pod), "%s ~ %s", tc.pod, tc.name)
	}
}
