package segments

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc64"
	"hash/fnv"
	"image"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Input generation shared by the CPU and file segments. Every generator takes
// an explicit *rand.Rand so that inputs are reproducible from Env.Seed.

// Upper bounds on sizes, so that a typo in a spec fails with a clear error
// instead of exhausting memory.
const (
	maxPayloadBytes = 256 << 20 // compress, decompress, readFile, writeFile
	maxJSONBytes    = 64 << 20  // json2yaml
	maxImageSide    = 4096      // imageCompress, imageResize, imageRotate
	maxMatrixSide   = 2048      // matMul
	maxFloatOps     = 10_000_000_000
)

// checkMax reports an error when size exceeds limit.
func checkMax(size, limit int, unit string) error {
	if size > limit {
		return fmt.Errorf("size %d %s exceeds the maximum of %d", size, unit, limit)
	}
	return nil
}

// inputRand returns the deterministic random source for one segment instance:
// a PCG generator seeded from env.Seed, env.Instance and the segment name, so
// that different segments of one application get unrelated inputs.
func inputRand(env Env, name string) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	stream := uint64(env.Instance)*0x9e3779b97f4a7c15 ^ h.Sum64()
	return rand.New(rand.NewPCG(uint64(env.Seed), stream))
}

var crcTable = crc64.MakeTable(crc64.ECMA)

// digest is the checksum segments report for a byte output (CRC-64/ECMA).
func digest(b []byte) uint64 { return crc64.Checksum(b, crcTable) }

// digestFloats is the checksum of a float64 output: CRC-64/ECMA of the
// little-endian IEEE-754 bits, so equal values give equal digests.
func digestFloats(xs []float64) uint64 {
	var buf [8 * 256]byte
	var sum uint64
	for len(xs) > 0 {
		n := min(len(xs), 256)
		for i, x := range xs[:n] {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(x))
		}
		sum = crc64.Update(sum, crcTable, buf[:8*n])
		xs = xs[n:]
	}
	return sum
}

// genBytes returns n uniformly random (incompressible) bytes.
func genBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n+7)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

var loremWords = []string{
	"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit",
	"sed", "do", "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore",
	"magna", "aliqua", "enim", "ad", "minim", "veniam", "quis", "nostrud",
	"exercitation", "ullamco", "laboris", "nisi", "aliquip", "ex", "ea", "commodo",
	"consequat", "duis", "aute", "irure", "in", "reprehenderit", "voluptate",
	"velit", "esse", "cillum", "fugiat", "nulla", "pariatur", "excepteur", "sint",
	"occaecat", "cupidatat", "non", "proident", "sunt", "culpa", "qui", "officia",
	"deserunt", "mollit", "anim", "id", "est", "laborum", "praesent", "vitae",
	"arcu", "tristique", "viverra", "mauris", "rhoncus", "aenean", "vel", "pharetra",
	"nibh", "cras", "semper", "auctor", "neque", "vivamus", "porta", "lectus",
	"faucibus", "blandit", "turpis", "cursus", "hac", "habitasse", "platea",
	"dictumst", "quisque", "sagittis", "purus", "gravida", "fermentum", "morbi",
	"leo", "urna", "molestie", "at", "elementum", "eu", "facilisis", "ornare",
}

// genLorem returns exactly n bytes of lorem-ipsum-like ASCII text: sentences
// of 4 to 14 words with occasional commas. With paragraphs, sentences are
// grouped into paragraphs separated by blank lines; otherwise the text is a
// single line (letters, spaces, commas and full stops only).
func genLorem(r *rand.Rand, n int, paragraphs bool) []byte {
	out := make([]byte, 0, n+32)
	sentenceLeft, paragraphLeft := 0, 3+r.IntN(5)
	for len(out) < n {
		if sentenceLeft == 0 {
			if len(out) > 0 {
				out = append(out, '.')
				paragraphLeft--
				if paragraphs && paragraphLeft == 0 {
					out = append(out, '\n', '\n')
					paragraphLeft = 3 + r.IntN(5)
				} else {
					out = append(out, ' ')
				}
			}
			sentenceLeft = 4 + r.IntN(11)
			w := loremWords[r.IntN(len(loremWords))]
			out = append(out, w[0]-'a'+'A')
			out = append(out, w[1:]...)
		} else {
			if r.IntN(8) == 0 {
				out = append(out, ',')
			}
			out = append(out, ' ')
			out = append(out, loremWords[r.IntN(len(loremWords))]...)
		}
		sentenceLeft--
	}
	return out[:n:n]
}

// loremPhrase returns k space-separated lorem words.
func loremPhrase(r *rand.Rand, k int) string {
	b := make([]byte, 0, 8*k)
	for i := range k {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, loremWords[r.IntN(len(loremWords))]...)
	}
	return string(b)
}

// genImage returns an opaque w×h image with structure, like a photo or a
// drawing rather than noise: a two-colour linear gradient in a random
// direction, 3 to 8 translucent rectangles and ellipses, and mild noise.
func genImage(r *rand.Rand, w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	type shape struct {
		ellipse        bool
		cx, cy, rx, ry float64
		col            [3]float64
		alpha          float64
	}
	randColour := func() [3]float64 {
		return [3]float64{r.Float64() * 255, r.Float64() * 255, r.Float64() * 255}
	}
	c0, c1 := randColour(), randColour()
	angle := r.Float64() * 2 * math.Pi
	dx, dy := math.Cos(angle), math.Sin(angle)
	// Project the corners to normalise the gradient parameter to [0, 1].
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range [][2]float64{{0, 0}, {float64(w), 0}, {0, float64(h)}, {float64(w), float64(h)}} {
		t := p[0]*dx + p[1]*dy
		lo, hi = math.Min(lo, t), math.Max(hi, t)
	}
	shapes := make([]shape, 3+r.IntN(6))
	for i := range shapes {
		shapes[i] = shape{
			ellipse: r.IntN(2) == 0,
			cx:      r.Float64() * float64(w),
			cy:      r.Float64() * float64(h),
			rx:      (0.05 + 0.25*r.Float64()) * float64(w),
			ry:      (0.05 + 0.25*r.Float64()) * float64(h),
			col:     randColour(),
			alpha:   0.5 + 0.5*r.Float64(),
		}
	}
	for y := range h {
		fy := float64(y) + 0.5
		for x := range w {
			fx := float64(x) + 0.5
			t := (fx*dx + fy*dy - lo) / (hi - lo)
			var c [3]float64
			for k := range c {
				c[k] = c0[k]*(1-t) + c1[k]*t
			}
			for _, s := range shapes {
				ux, uy := (fx-s.cx)/s.rx, (fy-s.cy)/s.ry
				inside := math.Abs(ux) <= 1 && math.Abs(uy) <= 1
				if s.ellipse {
					inside = ux*ux+uy*uy <= 1
				}
				if inside {
					for k := range c {
						c[k] = c[k]*(1-s.alpha) + s.col[k]*s.alpha
					}
				}
			}
			o := img.PixOffset(x, y)
			for k := range c {
				v := c[k] + float64(r.IntN(13)-6)
				img.Pix[o+k] = uint8(math.Max(0, math.Min(255, math.Round(v))))
			}
			img.Pix[o+3] = 0xff
		}
	}
	return img
}

// jsonEmptyDoc is the smallest document genJSON produces.
const jsonEmptyDoc = `{"comment":"","items":[]}`

// genJSON returns a compact JSON document of exactly n bytes when n is at
// least len(jsonEmptyDoc) (otherwise that smallest document): an object with an
// "items" array of nested records (objects, arrays, strings, numbers, booleans,
// null) and a lorem "comment" string that pads the document to n bytes.
func genJSON(r *rand.Rand, n int) ([]byte, error) {
	var items []json.RawMessage
	total := len(jsonEmptyDoc)
	for id := 1; ; id++ {
		rec, err := json.Marshal(jsonRecord(r, id))
		if err != nil {
			return nil, fmt.Errorf("generate JSON record %d: %w", id, err)
		}
		next := total + len(rec)
		if len(items) > 0 {
			next++ // comma
		}
		if next > n {
			break
		}
		items = append(items, rec)
		total = next
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	comment := ""
	if n > total {
		comment = string(genLorem(r, n-total, false))
	}
	doc, err := json.Marshal(map[string]any{"comment": comment, "items": items})
	if err != nil {
		return nil, fmt.Errorf("generate JSON document: %w", err)
	}
	return doc, nil
}

// jsonRecord returns one nested record of roughly 150 to 300 bytes.
func jsonRecord(r *rand.Rand, id int) map[string]any {
	tags := make([]any, 1+r.IntN(4))
	for i := range tags {
		tags[i] = loremWords[r.IntN(len(loremWords))]
	}
	history := make([]any, r.IntN(5))
	for i := range history {
		history[i] = map[string]any{"day": 1 + r.IntN(365), "value": r.IntN(10000)}
	}
	rec := map[string]any{
		"id":      id,
		"name":    loremPhrase(r, 2+r.IntN(2)),
		"active":  r.IntN(2) == 0,
		"score":   math.Round(r.Float64()*1e4) / 100,
		"tags":    tags,
		"history": history,
		"location": map[string]any{
			"city": loremPhrase(r, 1),
			"lat":  math.Round((r.Float64()*180-90)*1e4) / 1e4,
			"lon":  math.Round((r.Float64()*360-180)*1e4) / 1e4,
		},
	}
	if r.IntN(4) == 0 {
		rec["parent"] = nil
	}
	return rec
}

// genMatrix returns an n×n matrix of values uniform in [-1, 1).
func genMatrix(r *rand.Rand, n int) *mat.Dense {
	data := make([]float64, n*n)
	for i := range data {
		data[i] = 2*r.Float64() - 1
	}
	return mat.NewDense(n, n, data)
}
