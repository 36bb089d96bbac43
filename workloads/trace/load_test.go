package trace

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	files := []struct {
		name, content string
		opts          []LoadOption
		want          Series
	}{
		{name: "rps.txt", content: "1 2\n3\n", want: Series{Step: time.Second, Values: []float64{1, 2, 3}}},
		{name: "d01.csv", content: azure2019(2, "o,a,f,http,1,2", "o,b,g,timer,3,4"), want: Series{Step: time.Minute, Values: []float64{4, 6}}},
		{name: "inv.txt", content: "app,func,end_timestamp,duration\na,f,3,1\na,f,4,0\na,f,2,0\n", opts: []LoadOption{WithBinStep(2 * time.Second)},
			want: Series{Step: 2 * time.Second, Values: []float64{2, 1}}},
		{name: "llm.csv", content: "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,1,1\n2023-11-16 18:17:05.5,1,1\n",
			want: Series{Step: time.Second, Values: []float64{1, 0, 1}}},
		{name: "counts.dat", content: "5 6", opts: []LoadOption{WithFormat(FormatCounts)}, want: Series{Step: time.Second, Values: []float64{5, 6}}},
	}
	for _, f := range files {
		for _, compress := range []bool{false, true} {
			data, name := []byte(f.content), f.name
			if compress {
				data, name = gz(t, data), f.name+".gz"
			}
			t.Run(name, func(t *testing.T) {
				// The gzip'd copies are also written without the .gz
				// extension: detection is by content.
				for _, fileName := range []string{name, f.name + ".bin"} {
					s, err := Load(writeFile(t, fileName, data), f.opts...)
					require.NoError(t, err)
					want := f.want
					want.Name = fileName
					assert.Equal(t, want, s)
				}
			})
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, content string
		opts          []LoadOption
		err           string
	}{
		{"unknown header", "time,count\n1,2\n", nil, `x.csv:1: unknown trace format: first line "time,count"`},
		{"empty", "", nil, "x.csv: the file is empty"},
		{"white space", " \n\t\n", nil, "x.csv: the file holds only white space"},
		{"binary", "1 2\x00\x01\x02\xff", nil, "x.csv: not a text trace or a gzip'd one: binary content at byte 4"},
		{"invalid UTF-8", "1 2 \xff\xfe", nil, "binary content at byte 5"},
		{"forced wrong format", "1 2 3", []LoadOption{WithFormat(FormatAzureLLM)}, `x.csv:1: header: 1 columns ["1 2 3"]`},
		{"bad value", "1 2 three", nil, `x.csv:1:5: value 3: "three"`},
		{"bad bin step", "app,func,end_timestamp,duration\na,f,3,1\n", []LoadOption{WithBinStep(0)}, "x.csv: bin step 0s must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, "x.csv", []byte(tt.content)), tt.opts...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
		})
	}
	_, err := Load("/nonexistent/trace.txt")
	assert.ErrorContains(t, err, "open trace:")
}

// TestLoadDamagedFiles: empty, binary and truncated files are refused with
// a message that says so in words and names the file, never their bytes.
func TestLoadDamagedFiles(t *testing.T) {
	var long strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&long, "%d ", i%97)
	}
	big := gz(t, []byte(long.String()))
	small := gz(t, []byte("1 2 3 4 5 6 7 8 9 10\n"))
	binary := make([]byte, 4096)
	for i := range binary {
		binary[i] = byte(i * 7919 >> 3)
	}
	tests := []struct {
		name string
		data []byte
		err  string
	}{
		{"empty gzip stream", gz(t, nil), "t.gz: the file is empty"},
		{"truncated small gzip", small[:len(small)-12], "t.gz: gzip: the compressed data ends early: the file is truncated"},
		{"truncated large gzip", big[:len(big)/2], "t.gz:1: read: gzip: the compressed data ends early: the file is truncated"},
		{"gzip header only", small[:5], "t.gz: gzip:"},
		{"binary", binary, "t.gz: not a text trace or a gzip'd one: binary content at byte 1"},
		{"gzip'd binary", gz(t, binary), "t.gz: not a text trace or a gzip'd one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, "t.gz", tt.data))
			require.Error(t, err)
			assert.ErrorContains(t, err, tt.err)
			assert.True(t, utf8.ValidString(err.Error()) && !strings.ContainsAny(err.Error(), "\x00\x01\x02"), "the message holds no raw bytes: %q", err)
			assert.Less(t, len(err.Error()), 200, "a short message: %q", err)
		})
	}
}

func TestFormatNames(t *testing.T) {
	for _, f := range []Format{FormatCounts, FormatAzureFunctions2019, FormatAzureFunctions2021, FormatAzureLLM} {
		got, err := ParseFormat(f.String())
		require.NoError(t, err)
		assert.Equal(t, f, got)
	}
	_, err := ParseFormat("unknown")
	assert.ErrorContains(t, err, `unknown trace format "unknown"`)
	assert.Equal(t, "Format(42)", Format(42).String())
}

func TestLoadAzureLLM(t *testing.T) {
	p := writeFile(t, "llm.csv.gz", gz(t, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,100,7\n")))
	tr, err := LoadAzureLLM(p)
	require.NoError(t, err)
	assert.Equal(t, "llm.csv.gz", tr.Name)
	assert.Equal(t, []Request{{At: 0, ContextTokens: 100, GeneratedTokens: 7}}, tr.Requests)
}
