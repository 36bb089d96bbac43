package segments

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// compressSizes are the payload sizes of compress and decompress in bytes:
// 128 KiB to 1 MiB, as in the file-size instability scenario.
var compressSizes = []int{128 << 10, 256 << 10, 384 << 10, 512 << 10, 768 << 10, 1024 << 10}

func init() {
	Register(Info{
		Name:  "compress",
		Unit:  "bytes of text",
		Sizes: compressSizes,
		New: func(_ context.Context, size int, env Env) (Instance, error) {
			if err := checkMax(size, maxPayloadBytes, "bytes"); err != nil {
				return nil, err
			}
			return compressSeg{text: genLorem(inputRand(env, "compress"), size, true)}, nil
		},
	})
	Register(Info{
		Name:  "decompress",
		Unit:  "bytes of text (uncompressed)",
		Sizes: compressSizes,
		New: func(_ context.Context, size int, env Env) (Instance, error) {
			if err := checkMax(size, maxPayloadBytes, "bytes"); err != nil {
				return nil, err
			}
			r := inputRand(env, "decompress")
			f := codec(r.IntN(2))
			return newDecompressSeg(genLorem(r, size, true), f)
		},
	})
}

// codec is a DEFLATE container format.
type codec int

const (
	// codecGzip is gzip (RFC 1952): DEFLATE with a header and a CRC-32 trailer.
	codecGzip codec = iota
	// codecDeflate is raw DEFLATE (RFC 1951) without integrity check.
	codecDeflate
)

func (c codec) String() string {
	switch c {
	case codecGzip:
		return "gzip"
	case codecDeflate:
		return "deflate"
	}
	return fmt.Sprintf("codec(%d)", int(c))
}

// Writers are large (hundreds of KiB of match tables), so they are pooled and
// Reset per call, as a long-running function would keep them.
var (
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression) // a valid level never fails
		return w
	}}
	flateWriters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(io.Discard, flate.DefaultCompression) // a valid level never fails
		return w
	}}
)

// compressBytes compresses src with c at the default level. The output is
// deterministic (the gzip header carries no name and a zero time).
func compressBytes(c codec, src []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(src)/2 + 64)
	var w io.WriteCloser
	switch c {
	case codecGzip:
		gw := gzipWriters.Get().(*gzip.Writer)
		gw.Reset(&buf)
		defer func() { gw.Reset(io.Discard); gzipWriters.Put(gw) }()
		w = gw
	case codecDeflate:
		fw := flateWriters.Get().(*flate.Writer)
		fw.Reset(&buf)
		defer func() { fw.Reset(io.Discard); flateWriters.Put(fw) }()
		w = fw
	default:
		return nil, fmt.Errorf("compress: unknown %v", c)
	}
	if _, err := w.Write(src); err != nil {
		return nil, fmt.Errorf("%v compress: %w", c, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("%v compress: %w", c, err)
	}
	return buf.Bytes(), nil
}

// decompressBytes decompresses src, which must hold exactly want bytes of
// c-compressed data; for gzip the CRC-32 trailer is verified.
func decompressBytes(c codec, src []byte, want int) ([]byte, error) {
	var r io.ReadCloser
	switch c {
	case codecGzip:
		gr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("gzip decompress: %w", err)
		}
		gr.Multistream(false)
		r = gr
	case codecDeflate:
		r = flate.NewReader(bytes.NewReader(src))
	default:
		return nil, fmt.Errorf("decompress: unknown %v", c)
	}
	out := make([]byte, want)
	n, err := io.ReadFull(r, out)
	if err != nil {
		return nil, fmt.Errorf("%v decompress: got %d bytes, want %d: %w", c, n, want, err)
	}
	// Read to the end, which checks the gzip trailer and that nothing follows.
	var extra [1]byte
	if n, err := r.Read(extra[:]); n != 0 || !errors.Is(err, io.EOF) {
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%v decompress: after %d bytes: %w", c, want, err)
		}
		return nil, fmt.Errorf("%v decompress: data longer than the expected %d bytes", c, want)
	}
	if err := r.Close(); err != nil {
		return nil, fmt.Errorf("%v decompress: %w", c, err)
	}
	return out, nil
}

// compressSeg gzips a lorem-ipsum text per request (Sizeless' compress).
type compressSeg struct{ text []byte }

func (s compressSeg) Run(ctx context.Context) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	out, err := compressBytes(codecGzip, s.text)
	if err != nil {
		return Result{}, err
	}
	return Result{
		BytesIn:  int64(len(s.text)),
		BytesOut: int64(len(out)),
		Items:    1,
		Checksum: digest(out),
	}, nil
}

func (compressSeg) Close(context.Context) error { return nil }

// decompressSeg inflates a text compressed at setup (Sizeless' decompress).
// The container is gzip or raw DEFLATE, chosen from the seed, so that a pool of
// applications exercises both; the cost differs only by gzip's CRC-32 check.
// Every request verifies the length and the checksum of the output.
type decompressSeg struct {
	format codec
	comp   []byte
	size   int
	sum    uint64
}

func newDecompressSeg(text []byte, f codec) (decompressSeg, error) {
	comp, err := compressBytes(f, text)
	if err != nil {
		return decompressSeg{}, err
	}
	return decompressSeg{format: f, comp: comp, size: len(text), sum: digest(text)}, nil
}

func (s decompressSeg) Run(ctx context.Context) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	out, err := decompressBytes(s.format, s.comp, s.size)
	if err != nil {
		return Result{}, err
	}
	sum := digest(out)
	if sum != s.sum {
		return Result{}, fmt.Errorf("%v decompress: output checksum %#x, want %#x", s.format, sum, s.sum)
	}
	return Result{
		BytesIn:  int64(len(s.comp)),
		BytesOut: int64(s.size),
		Items:    1,
		Checksum: sum,
	}, nil
}

func (decompressSeg) Close(context.Context) error { return nil }
