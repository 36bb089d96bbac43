package telemetry

import "regexp"

// nameAlphabet is the alphabet of the ReplicaSet's pod-template hash and of
// the random suffix the API server appends to generated names (Kubernetes'
// rand.String and rand.SafeEncodeString: no vowels, no confusable digits).
const nameAlphabet = "[bcdfghjklmnpqrstvwxz2456789]"

// maxGeneratedPrefix is the longest generateName prefix the API server
// keeps (63 characters minus the 5 random ones).
const maxGeneratedPrefix = 58

// DeploymentPodRegex returns the PromQL (fully anchored RE2) regex of the
// pods of the Deployment name: <name>-<pod-template hash, 1–10
// characters>-<5 random characters>. The API server cuts the generated
// prefix <name>-<hash>- to 58 characters; for names longer than 46
// characters the pattern admits the cut forms, and for names of 58
// characters or more it can only check their first 58 characters, so it
// then also matches a Deployment whose name shares them.
func DeploymentPodRegex(name string) string {
	q := regexp.QuoteMeta
	const hash = nameAlphabet + "{1,10}"
	const suffix = nameAlphabet + "{5}"
	switch n := len(name); {
	case n+len("-")+10+len("-") <= maxGeneratedPrefix: // never cut
		return q(name) + "-" + hash + "-" + suffix
	case n+len("-") < maxGeneratedPrefix: // the hash, or its dash, may be cut
		return q(name) + "-" + hash + "-?" + suffix
	case n+len("-") == maxGeneratedPrefix: // only the name and its dash remain
		return q(name) + "-" + suffix
	default:
		return q(name[:maxGeneratedPrefix]) + suffix
	}
}
