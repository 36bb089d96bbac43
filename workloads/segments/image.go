package segments

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"sync"

	xdraw "golang.org/x/image/draw"
)

// imageSizes are image sides in pixels: 40 → 160 is the image instability
// scenario; 320 adds a heavier point.
var imageSizes = []int{40, 80, 160, 320}

// jpegQuality is the JPEG quality imageCompress encodes at.
const jpegQuality = 75

func init() {
	for _, op := range []imageOp{imageCompress, imageResize, imageRotate} {
		Register(Info{
			Name:  op.String(),
			Unit:  "pixels per side",
			Sizes: imageSizes,
			New: func(_ context.Context, size int, env Env) (Instance, error) {
				return newImageSeg(op, size, env)
			},
		})
	}
}

// imageOp is the operation an image segment applies.
type imageOp int

const (
	imageCompress imageOp = iota // encode as JPEG
	imageResize                  // scale to half size (Catmull-Rom)
	imageRotate                  // rotate 90° clockwise
)

func (op imageOp) String() string {
	switch op {
	case imageCompress:
		return "imageCompress"
	case imageResize:
		return "imageResize"
	case imageRotate:
		return "imageRotate"
	}
	return fmt.Sprintf("imageOp(%d)", int(op))
}

// imageSeg holds a generated image encoded as PNG. Like Sizeless' functions,
// which read an image file, every request decodes the PNG, applies the
// operation and encodes the output: JPEG (quality 75) for imageCompress,
// lossless PNG for imageResize and imageRotate, so their outputs can be checked
// pixel by pixel. imageCompress and imageResize use a size×size image;
// imageRotate uses size × max(1, 3·size/4), so a rotation visibly swaps the sides.
type imageSeg struct {
	op   imageOp
	src  []byte // PNG
	w, h int
}

func newImageSeg(op imageOp, size int, env Env) (imageSeg, error) {
	if err := checkMax(size, maxImageSide, "pixels per side"); err != nil {
		return imageSeg{}, err
	}
	w, h := size, size
	if op == imageRotate {
		h = max(1, size*3/4)
	}
	img := genImage(inputRand(env, op.String()), w, h)
	var buf bytes.Buffer
	if err := pngEncoder.Encode(&buf, img); err != nil {
		return imageSeg{}, fmt.Errorf("encode input image: %w", err)
	}
	return imageSeg{op: op, src: buf.Bytes(), w: w, h: h}, nil
}

// pngPool reuses the PNG encoders' compression state across requests.
type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}

func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

var pngEncoder = &png.Encoder{CompressionLevel: png.DefaultCompression, BufferPool: &pngPool{}}

// render decodes the input, applies the operation and returns the encoded
// output and the number of output pixels.
func (s imageSeg) render() ([]byte, int, error) {
	decoded, err := png.Decode(bytes.NewReader(s.src))
	if err != nil {
		return nil, 0, fmt.Errorf("%v: decode input: %w", s.op, err)
	}
	src := toRGBA(decoded)
	var buf bytes.Buffer
	var out *image.RGBA
	switch s.op {
	case imageCompress:
		out = src
		err = jpeg.Encode(&buf, src, &jpeg.Options{Quality: jpegQuality})
	case imageResize:
		out = resizeHalf(src)
		err = pngEncoder.Encode(&buf, out)
	case imageRotate:
		out = rotate90(src)
		err = pngEncoder.Encode(&buf, out)
	default:
		return nil, 0, fmt.Errorf("unknown %v", s.op)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%v: encode output: %w", s.op, err)
	}
	return buf.Bytes(), out.Rect.Dx() * out.Rect.Dy(), nil
}

func (s imageSeg) Run(ctx context.Context) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	out, pixels, err := s.render()
	if err != nil {
		return Result{}, err
	}
	return Result{
		BytesIn:  int64(len(s.src)),
		BytesOut: int64(len(out)),
		Items:    int64(pixels),
		Checksum: digest(out),
	}, nil
}

func (imageSeg) Close(context.Context) error { return nil }

// toRGBA returns img as an *image.RGBA with its origin at (0, 0), converting
// only when needed.
func toRGBA(img image.Image) *image.RGBA {
	if m, ok := img.(*image.RGBA); ok && m.Rect.Min == (image.Point{}) {
		return m
	}
	b := img.Bounds()
	m := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(m, m.Rect, img, b.Min, draw.Src)
	return m
}

// resizeHalf scales src to half its width and height (at least 1 pixel)
// with the Catmull-Rom kernel.
func resizeHalf(src *image.RGBA) *image.RGBA {
	dst := image.NewRGBA(image.Rect(0, 0, max(1, src.Rect.Dx()/2), max(1, src.Rect.Dy()/2)))
	xdraw.CatmullRom.Scale(dst, dst.Rect, src, src.Rect, xdraw.Src, nil)
	return dst
}

// rotate90 returns src rotated 90° clockwise, pixel for pixel: a w×h image
// becomes h×w and the source pixel (x, y) moves to (h-1-y, x).
func rotate90(src *image.RGBA) *image.RGBA {
	b := src.Rect
	w, h := b.Dx(), b.Dy()
	dst := image.NewRGBA(image.Rect(0, 0, h, w))
	for y := range h {
		so := src.PixOffset(b.Min.X, b.Min.Y+y)
		for x := range w {
			do := dst.PixOffset(h-1-y, x)
			copy(dst.Pix[do:do+4], src.Pix[so+4*x:so+4*x+4])
		}
	}
	return dst
}
