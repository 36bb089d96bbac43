package segments

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRotate90(t *testing.T) {
	for _, tc := range []struct{ w, h int }{{1, 1}, {1, 3}, {4, 3}, {40, 30}, {7, 11}} {
		t.Run(fmt.Sprintf("%dx%d", tc.w, tc.h), func(t *testing.T) {
			src := genImage(testRand(1), tc.w, tc.h)
			r := rotate90(src)
			require.Equal(t, image.Rect(0, 0, tc.h, tc.w), r.Rect, "sides swap")
			for y := range tc.h {
				for x := range tc.w {
					require.Equal(t, src.RGBAAt(x, y), r.RGBAAt(tc.h-1-y, x), "pixel (%d,%d)", x, y)
				}
			}
			full := rotate90(rotate90(rotate90(r)))
			assert.Equal(t, src.Rect, full.Rect)
			assert.Equal(t, src.Pix, full.Pix, "four rotations are the identity")
			twice := rotate90(r)
			assert.Equal(t, src.RGBAAt(0, 0), twice.RGBAAt(tc.w-1, tc.h-1), "two rotations turn the image upside down")
		})
	}
}

func TestRotate90SubImage(t *testing.T) {
	src := genImage(testRand(2), 10, 8)
	sub := src.SubImage(image.Rect(2, 1, 7, 4)).(*image.RGBA)
	r := rotate90(sub)
	require.Equal(t, image.Rect(0, 0, 3, 5), r.Rect)
	assert.Equal(t, src.RGBAAt(2, 1), r.RGBAAt(2, 0))
	assert.Equal(t, src.RGBAAt(6, 3), r.RGBAAt(0, 4))
}

func TestResizeHalf(t *testing.T) {
	for _, tc := range []struct{ w, h, ww, wh int }{
		{1, 1, 1, 1}, {3, 5, 1, 2}, {40, 40, 20, 20}, {161, 80, 80, 40},
	} {
		out := resizeHalf(genImage(testRand(1), tc.w, tc.h))
		assert.Equal(t, image.Rect(0, 0, tc.ww, tc.wh), out.Rect, "%dx%d", tc.w, tc.h)
	}
	// A flat image stays flat.
	flat := genImage(testRand(1), 8, 8)
	for i := range flat.Pix {
		flat.Pix[i] = 100
	}
	out := resizeHalf(flat)
	for _, p := range out.Pix {
		require.Equal(t, uint8(100), p)
	}
}

func TestImageSegmentsRender(t *testing.T) {
	for _, op := range []imageOp{imageCompress, imageResize, imageRotate} {
		for _, size := range cpuSizes(t, op.String()) {
			t.Run(fmt.Sprintf("%v/size=%d", op, size), func(t *testing.T) {
				s, err := newImageSeg(op, size, cpuEnv(t, 5))
				require.NoError(t, err)
				src, err := png.Decode(bytes.NewReader(s.src))
				require.NoError(t, err)
				in := toRGBA(src)
				out, pixels, err := s.render()
				require.NoError(t, err)
				switch op {
				case imageCompress:
					require.Equal(t, image.Rect(0, 0, size, size), in.Rect)
					img, err := jpeg.Decode(bytes.NewReader(out))
					require.NoError(t, err)
					require.Equal(t, in.Rect, img.Bounds())
					assert.Equal(t, size*size, pixels)
					assert.Less(t, meanAbsDiff(in, toRGBA(img)), 8.0, "JPEG should resemble its source")
				case imageResize:
					img, err := png.Decode(bytes.NewReader(out))
					require.NoError(t, err)
					require.Equal(t, image.Rect(0, 0, size/2, size/2), img.Bounds())
					assert.Equal(t, resizeHalf(in).Pix, toRGBA(img).Pix)
					assert.Equal(t, size*size/4, pixels)
				case imageRotate:
					require.Equal(t, image.Rect(0, 0, size, size*3/4), in.Rect)
					img, err := png.Decode(bytes.NewReader(out))
					require.NoError(t, err)
					require.Equal(t, image.Rect(0, 0, size*3/4, size), img.Bounds(), "sides swap")
					assert.Equal(t, rotate90(in).Pix, toRGBA(img).Pix, "pixel-exact rotation")
					assert.Equal(t, size*(size*3/4), pixels)
				}
			})
		}
	}
}

func TestImageSegmentRejectsBadInput(t *testing.T) {
	s, err := newImageSeg(imageRotate, 1, cpuEnv(t, 1))
	require.NoError(t, err)
	assert.Equal(t, 1, s.h, "a 1-pixel image keeps at least one row")
	s.src = s.src[:len(s.src)/2]
	_, _, err = s.render()
	assert.ErrorContains(t, err, "imageRotate: decode input")
}

func meanAbsDiff(a, b *image.RGBA) float64 {
	var sum float64
	for i := range a.Pix {
		sum += absDiff(a.Pix[i], b.Pix[i])
	}
	return sum / float64(len(a.Pix))
}
