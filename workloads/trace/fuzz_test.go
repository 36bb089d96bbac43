package trace

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// Each fuzz target checks that a loader never panics and returns either an
// error or a valid series (positive step, finite non-negative values).
// Binned loaders use an hour step so that a stray timestamp cannot make the
// fuzzer allocate gigabytes (BinArrivals allows up to 10^8 bins).

func FuzzReadCounts(f *testing.F) {
	for _, s := range []string{"1 2 3", "0\n0\n", " 7\t8\r\n", "1 x", "-1", "", strings.Repeat("9", 70), "9007199254740993"} {
		f.Add([]byte(s))
	}
	f.Add(gz(f, []byte("4 5 6\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadCounts(bytes.NewReader(data), "fuzz.txt")
		if err != nil {
			require.Contains(t, err.Error(), "fuzz.txt")
			return
		}
		checkSeries(t, s)
		require.NotEmpty(t, s.Values)
		require.Equal(t, time.Second, s.Step)
	})
}

func FuzzReadAzureFunctions2019(f *testing.F) {
	f.Add([]byte(azure2019(3, "o,a,f,http,1,0,2", "o,b,g,timer,0,5,0")))
	f.Add([]byte(azure2019(2, "o,a,f,http,1")))
	f.Add([]byte(azure2019(1, `o,"a`)))
	f.Add([]byte("HashOwner,HashApp,HashFunction,Trigger,2\n"))
	f.Add(gz(f, []byte(azure2019(1, "o,a,f,queue,9"))))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := ReadAzureFunctions2019(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			require.Contains(t, err.Error(), "fuzz.csv")
			return
		}
		require.NotEmpty(t, fs)
		for _, f := range fs {
			checkSeries(t, f.Series)
			require.Equal(t, len(fs[0].Series.Values), len(f.Series.Values))
		}
		sums, err := AggregateAzureFunctions2019(bytes.NewReader(data), "fuzz.csv", ByApp)
		require.NoError(t, err)
		for _, s := range sums {
			checkSeries(t, s)
		}
	})
}

func FuzzBinAzureFunctions2021(f *testing.F) {
	const h = "app,func,end_timestamp,duration\n"
	for _, s := range []string{h + "a,f,10.5,0.5\nb,g,3,1.25\n", h + "a,f,1e9,0\na,f,-1e9,0\n", h + "a,f,x,1\n", h + "a,f,1,-1\n", h + "a,f,Inf,0\n", h} {
		f.Add([]byte(s))
	}
	f.Add(gz(f, []byte(h+"a,f,5,1\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := BinAzureFunctions2021(bytes.NewReader(data), "fuzz.txt", time.Hour)
		if err != nil {
			require.Contains(t, err.Error(), "fuzz.txt")
			return
		}
		checkSeries(t, s)
		require.Positive(t, s.Total())
	})
}

func FuzzReadAzureLLM(f *testing.F) {
	const h = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	for _, s := range []string{
		h + "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n",
		h + "2023-11-16 18:17:05,1,1\n2023-11-16 18:17:03,2,2\n",
		h + "2023-11-16T18:17:05,1,1\n", h + "2023-11-16 18:17:05,-1,1\n", h + "0001-01-01 00:00:00,1,1\n9999-12-31 23:59:59,1,1\n", h,
	} {
		f.Add([]byte(s))
	}
	f.Add(gz(f, []byte(h+"2023-11-16 18:17:05,1,1\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadAzureLLM(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			require.Contains(t, err.Error(), "fuzz.csv")
			return
		}
		require.NotEmpty(t, tr.Requests)
		for i, r := range tr.Requests {
			require.GreaterOrEqual(t, r.At, time.Duration(0))
			require.GreaterOrEqual(t, r.ContextTokens, 0)
			require.GreaterOrEqual(t, r.GeneratedTokens, 0)
			if i > 0 {
				require.GreaterOrEqual(t, r.At, tr.Requests[i-1].At, "sorted")
			}
		}
		s, err := tr.Series(time.Hour)
		require.NoError(t, err)
		checkSeries(t, s)
		require.Equal(t, float64(len(tr.Requests)), s.Total())
	})
}

func FuzzDetect(f *testing.F) {
	for _, s := range []string{"1 2 3", "HashOwner,HashApp,HashFunction,Trigger,1\n", "app,func,end_timestamp,duration\n", "TIMESTAMP,ContextTokens,GeneratedTokens\n", "x,y\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br, err := plain(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		format, err := detect(br, "fuzz")
		if err != nil {
			require.Equal(t, FormatUnknown, format)
			msg := err.Error()
			known := false
			for _, want := range []string{"fuzz:1: unknown trace format", "fuzz: the file is empty", "fuzz: the file holds only white space", "fuzz: not a text trace or a gzip'd one: binary content at byte "} {
				known = known || strings.HasPrefix(msg, want)
			}
			require.True(t, known, "an unexpected refusal: %q", msg)
			require.True(t, utf8.ValidString(msg), "the message holds no raw bytes: %q", msg)
			return
		}
		require.NotEqual(t, FormatUnknown, format)
	})
}

// FuzzFit checks that Fit never panics and that what it returns is a valid
// model that Generate accepts. Each byte is a count per minute; the first
// byte picks the step.
func FuzzFit(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4})
	f.Add(append([]byte{1}, bytes.Repeat([]byte{10, 12, 9, 200, 11}, 100)...))
	f.Add(append([]byte{2}, bytes.Repeat([]byte{0, 0, 0, 0, 90}, 100)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 1024 {
			return // long inputs only make executions slow
		}
		steps := []time.Duration{time.Second, time.Minute, time.Hour}
		s := Series{Step: steps[int(data[0])%len(steps)], Values: make([]float64, len(data)-1)}
		for i, b := range data[1:] {
			s.Values[i] = float64(b)
		}
		p, err := Fit(s)
		if err != nil {
			return
		}
		require.NoError(t, p.Validate())
		g, err := Generate(p, s.Step, s.Span(), 1)
		require.NoError(t, err)
		checkSeries(t, g)
	})
}
