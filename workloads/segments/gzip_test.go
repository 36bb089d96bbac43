package segments

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompressRoundTrip(t *testing.T) {
	for _, c := range []codec{codecGzip, codecDeflate} {
		for _, n := range []int{0, 1, 1000, 128 << 10} {
			t.Run(fmt.Sprintf("%v/n=%d", c, n), func(t *testing.T) {
				text := genLorem(testRand(uint64(n)), n, true)
				comp, err := compressBytes(c, text)
				require.NoError(t, err)
				again, err := compressBytes(c, text)
				require.NoError(t, err)
				assert.Equal(t, comp, again, "deterministic output")
				out, err := decompressBytes(c, comp, n)
				require.NoError(t, err)
				assert.Equal(t, text, out)
			})
		}
	}
}

func TestDecompressRejectsBadData(t *testing.T) {
	text := genLorem(testRand(1), 4096, true)
	for _, c := range []codec{codecGzip, codecDeflate} {
		comp, err := compressBytes(c, text)
		require.NoError(t, err)
		corrupt := append([]byte(nil), comp...)
		corrupt[len(corrupt)/2] ^= 0xff
		gzipTrailer := append([]byte(nil), comp...)
		if c == codecGzip {
			gzipTrailer[len(gzipTrailer)-6] ^= 0x01 // CRC-32
		}
		for _, tc := range []struct {
			name string
			data []byte
			want int
			msg  string
		}{
			{"longer than expected", comp, len(text) - 1, "longer"},
			{"shorter than expected", comp, len(text) + 1, "want"},
			{"truncated", comp[:len(comp)/2], len(text), "decompress"},
		} {
			t.Run(fmt.Sprintf("%v/%s", c, tc.name), func(t *testing.T) {
				_, err := decompressBytes(c, tc.data, tc.want)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.msg)
			})
		}
		t.Run(fmt.Sprintf("%v/corrupt", c), func(t *testing.T) {
			// Raw DEFLATE may inflate corrupt data without error; the
			// segment's checksum catches it.
			s := decompressSeg{format: c, comp: corrupt, size: len(text), sum: digest(text)}
			_, err := s.Run(context.Background())
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.String()+" decompress")
		})
		if c == codecGzip {
			_, err := decompressBytes(c, gzipTrailer, len(text))
			require.Error(t, err, "a wrong CRC-32 must be detected")
		}
	}
	_, err := compressBytes(codec(9), text)
	assert.ErrorContains(t, err, "codec(9)")
}

func TestCompressSegmentOutput(t *testing.T) {
	for _, size := range cpuSizes(t, "compress") {
		env := cpuEnv(t, 11)
		r := cpuRun(t, "compress", size, env)
		comp, err := compressBytes(codecGzip, genLorem(inputRand(env, "compress"), size, true))
		require.NoError(t, err)
		assert.Equal(t, digest(comp), r.Checksum)
		assert.EqualValues(t, len(comp), r.BytesOut)
	}
}

func TestDecompressSegment(t *testing.T) {
	formats := map[codec]bool{}
	for seed := int64(0); seed < 16; seed++ {
		inst := cpuNew(t, "decompress", 1000, cpuEnv(t, seed))
		formats[inst.(decompressSeg).format] = true
	}
	assert.Len(t, formats, 2, "seeds should select both gzip and deflate")

	for _, f := range []codec{codecGzip, codecDeflate} {
		text := genLorem(testRand(2), 128<<10, true)
		s, err := newDecompressSeg(text, f)
		require.NoError(t, err)
		r, err := s.Run(context.Background())
		require.NoError(t, err)
		assert.Equal(t, digest(text), r.Checksum)
		assert.EqualValues(t, len(s.comp), r.BytesIn)
		assert.EqualValues(t, len(text), r.BytesOut)

		s.sum++
		_, err = s.Run(context.Background())
		assert.ErrorContains(t, err, "checksum")
	}
}
