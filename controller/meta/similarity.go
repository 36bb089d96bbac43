package meta

import (
	"fmt"
	"math"
)

// Similarity is FLASH's similarity of two embeddings (dissertation §5.6),
// S = (1 − ED + CS) / 2, where ED = ‖a − b‖ / (‖a‖ + ‖b‖) is the Euclidean
// distance normalised to [0, 1] and CS the cosine similarity in [−1, 1];
// S is 1 for identical embeddings and lies in [−1/2, 1]. Two zero
// embeddings are identical (S = 1); a zero embedding against a non-zero one
// has ED = 1 and CS = 0 (S = 0).
func Similarity(a, b []float64) float64 {
	if len(a) != len(b) {
		panic(fmt.Sprintf("meta: Similarity: embeddings of %d and %d values", len(a), len(b)))
	}
	dot, na, nb, dist := similarityTerms(a, b)
	if na+nb == 0 {
		return 1
	}
	ed := dist / (na + nb)
	cs := 0.0
	if na > 0 && nb > 0 {
		cs = dot / (na * nb)
	}
	return (1 - ed + cs) / 2
}

// similarityTerms returns a·b, ‖a‖, ‖b‖ and ‖a − b‖.
func similarityTerms(a, b []float64) (dot, na, nb, dist float64) {
	var d2 float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
		d := a[i] - b[i]
		d2 += d * d
	}
	return dot, math.Sqrt(na), math.Sqrt(nb), math.Sqrt(d2)
}
