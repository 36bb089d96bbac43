package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// gzipMagic starts every gzip stream (RFC 1952).
var gzipMagic = []byte{0x1f, 0x8b}

// readBufferSize is the read buffer of every loader; it also bounds how far
// format detection looks ahead.
const readBufferSize = 64 << 10

// plain returns a buffered reader of r's content, decompressing it when it
// starts with the gzip magic bytes (whatever the file is called). name is
// used in error messages.
func plain(r io.Reader, name string) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(r, readBufferSize)
	head, err := br.Peek(len(gzipMagic))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: read: %w", name, err)
	}
	if !bytes.Equal(head, gzipMagic) {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	return bufio.NewReaderSize(&gzipErrors{r: zr}, readBufferSize), nil
}

// gzipErrors marks decompression errors met while streaming, so that the
// parser's message (which names file and line) says what failed.
type gzipErrors struct{ r io.Reader }

func (g *gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("gzip: the compressed data ends early: the file is truncated (%w)", err)
	case err != nil && !errors.Is(err, io.EOF):
		err = fmt.Errorf("gzip: %w", err)
	}
	return n, err
}

// binaryAt returns the offset of the first byte of head that no text trace
// holds (NUL or another control character than white space, or invalid
// UTF-8), or -1. full says head is only the start of the content: an
// incomplete character at its end is not counted.
func binaryAt(head []byte, full bool) int {
	for i := 0; i < len(head); {
		c := head[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f' || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n <= 1 {
			if full && len(head)-i < utf8.UTFMax && !utf8.FullRune(head[i:]) {
				return -1
			}
			return i
		}
		i += n
	}
	return -1
}

// openFile opens path and returns its (decompressed) content and the name to
// use in messages: the file's base name.
func openFile(path string) (*bufio.Reader, io.Closer, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, "", fmt.Errorf("open trace: %w", err)
	}
	name := filepath.Base(path)
	br, err := plain(f, name)
	if err != nil {
		f.Close()
		return nil, nil, "", err
	}
	return br, f, name, nil
}
