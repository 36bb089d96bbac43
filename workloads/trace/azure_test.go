package trace

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// azure2019 builds a count file with the given minutes and rows.
func azure2019(minutes int, rows ...string) string {
	var b strings.Builder
	b.WriteString("HashOwner,HashApp,HashFunction,Trigger")
	for m := 1; m <= minutes; m++ {
		fmt.Fprintf(&b, ",%d", m)
	}
	for _, r := range rows {
		b.WriteString("\n" + r)
	}
	return b.String() + "\n"
}

func TestReadAzureFunctions2019(t *testing.T) {
	tests := []struct {
		name, in string
		want     []FunctionSeries
		err      string
	}{
		{
			name: "two rows",
			in:   azure2019(3, "o1,a1,f1,http,1,0,2", "o1,a2,f2,timer,0,5,0"),
			want: []FunctionSeries{
				{Owner: "o1", App: "a1", Function: "f1", Trigger: "http", Series: Series{Name: "d.csv:f1", Step: time.Minute, Values: []float64{1, 0, 2}}},
				{Owner: "o1", App: "a2", Function: "f2", Trigger: "timer", Series: Series{Name: "d.csv:f2", Step: time.Minute, Values: []float64{0, 5, 0}}},
			},
		},
		{name: "byte order mark", in: "\ufeff" + azure2019(1, "o,a,f,http,4"), want: []FunctionSeries{
			{Owner: "o", App: "a", Function: "f", Trigger: "http", Series: Series{Name: "d.csv:f", Step: time.Minute, Values: []float64{4}}},
		}},
		{name: "no rows", in: azure2019(2), err: "d.csv: no function rows after the header"},
		{name: "empty", in: "", err: "d.csv: empty file"},
		{name: "wrong key column", in: strings.Replace(azure2019(2), "HashApp", "App", 1), err: `d.csv:1: header: column 2 is "App", want "HashApp"`},
		{name: "minute out of order", in: strings.Replace(azure2019(3), ",2,3", ",3,2", 1), err: `d.csv:1: header: column 6 is "3", want minute 2`},
		{name: "no minutes", in: "HashOwner,HashApp,HashFunction,Trigger\n", err: "d.csv:1: header: 4 columns"},
		{name: "short row", in: azure2019(3, "o,a,f,http,1,2,3", "o,a,g,http,1,2"), err: "d.csv:3: 6 fields, want 7 as in the header"},
		{name: "bad count", in: azure2019(3, "o,a,f,http,1,x,3"), err: `d.csv:2:14: column "2": "x" is not a non-negative integer`},
		{name: "negative count", in: azure2019(3, "o,a,f,http,1,2,-3"), err: `d.csv:2:16: column "3": "-3"`},
		{name: "bad quote", in: azure2019(1, `o,"a,f,http,1`), err: "d.csv:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadAzureFunctions2019(strings.NewReader(tt.in), "d.csv")
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAggregateAzureFunctions2019(t *testing.T) {
	in := azure2019(2, "o1,a1,f1,http,1,2", "o1,a1,f2,timer,10,20", "o1,a2,f3,http,100,200", "o2,a1,f4,queue,1000,0")
	tests := []struct {
		by   GroupBy
		want map[string][]float64
	}{
		{ByAll, map[string][]float64{"": {1111, 222}}},
		{ByOwner, map[string][]float64{"o1": {111, 222}, "o2": {1000, 0}}},
		{ByApp, map[string][]float64{"o1/a1": {11, 22}, "o1/a2": {100, 200}, "o2/a1": {1000, 0}}},
		{ByTrigger, map[string][]float64{"http": {101, 202}, "timer": {10, 20}, "queue": {1000, 0}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.by), func(t *testing.T) {
			got, err := AggregateAzureFunctions2019(bytes.NewReader(gz(t, []byte(in))), "d.csv.gz", tt.by)
			require.NoError(t, err)
			require.Len(t, got, len(tt.want))
			for k, v := range tt.want {
				assert.Equal(t, v, got[k].Values, "group %q", k)
				assert.Equal(t, time.Minute, got[k].Step)
			}
		})
	}
}

func TestScanAzureFunctions2019CallbackError(t *testing.T) {
	stop := errors.New("stop here")
	err := ScanAzureFunctions2019(strings.NewReader(azure2019(1, "o,a,f,http,1", "o,a,g,http,2")), "d.csv", func(fs FunctionSeries) error {
		if fs.Function == "g" {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	assert.Contains(t, err.Error(), "d.csv:3:")
}

func TestReadAzureFunctions2019FullDay(t *testing.T) {
	row := "o,a,f,http" + strings.Repeat(",1", 1440)
	got, err := ReadAzureFunctions2019(strings.NewReader(azure2019(1440, row)), "d01.csv")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, 24*time.Hour, got[0].Series.Span())
	assert.InDelta(t, 1440, got[0].Series.Total(), 0)
}

func TestAzureFunctions2021(t *testing.T) {
	const header = "app,func,end_timestamp,duration\n"
	t.Run("scan", func(t *testing.T) {
		var got []Invocation
		err := ScanAzureFunctions2021(strings.NewReader(header+"a,f,10.5,0.5\nb,g,3,1.25\n"), "i.txt", func(inv Invocation) error {
			got = append(got, inv)
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, []Invocation{
			{App: "a", Func: "f", Arrival: 10 * time.Second, Duration: 500 * time.Millisecond},
			{App: "b", Func: "g", Arrival: 1750 * time.Millisecond, Duration: 1250 * time.Millisecond},
		}, got)
	})
	t.Run("bin", func(t *testing.T) {
		in := header + "a,f,1.2,0.1\na,f,1.9,0.5\na,f,3.5,0\na,f,6.0,0.5\n" // arrivals 1.1 1.4 3.5 5.5
		s, err := BinAzureFunctions2021(bytes.NewReader(gz(t, []byte(in))), "i.txt.gz", 2*time.Second)
		require.NoError(t, err)
		assert.Equal(t, Series{Name: "i.txt.gz", Step: 2 * time.Second, Values: []float64{2, 1, 1}}, s)
	})
	errs := []struct{ name, in, err string }{
		{"bad header", "app,func,end,duration\n", `i.txt:1: header: column 3 is "end", want "end_timestamp"`},
		{"extra column", "app,func,end_timestamp,duration,x\n", "i.txt:1: header: 5 columns"},
		{"no rows", header, "i.txt: no invocation rows"},
		{"bad end", header + "a,f,x,1\n", `i.txt:2:5: column "end_timestamp": "x" is not a finite number of seconds`},
		{"nan duration", header + "a,f,1,NaN\n", `i.txt:2:7: column "duration": "NaN" is not a finite number`},
		{"negative duration", header + "a,f,1,-1\n", `i.txt:2:7: column "duration": -1 seconds is negative`},
		{"huge end", header + "a,f,1e300,1\n", `i.txt:2:5: column "end_timestamp": 1e+300 seconds is beyond`},
		{"short row", header + "a,f,1\n", "i.txt:2: 3 fields, want 4"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BinAzureFunctions2021(strings.NewReader(tt.in), "i.txt", time.Second)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
		})
	}
}

func TestReadAzureLLM(t *testing.T) {
	const header = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	t.Run("sorted requests", func(t *testing.T) {
		in := header + "2023-11-16 18:17:04.5000000,300,3\n2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:06,7,1\n"
		tr, err := ReadAzureLLM(strings.NewReader(in), "llm.csv")
		require.NoError(t, err)
		assert.Equal(t, time.Date(2023, 11, 16, 18, 17, 3, 979960000, time.UTC), tr.Start)
		assert.Equal(t, []Request{
			{At: 0, ContextTokens: 4808, GeneratedTokens: 10},
			{At: 520040 * time.Microsecond, ContextTokens: 300, GeneratedTokens: 3},
			{At: 2020040 * time.Microsecond, ContextTokens: 7, GeneratedTokens: 1},
		}, tr.Requests)
		s, err := tr.Series(time.Second)
		require.NoError(t, err)
		assert.Equal(t, []float64{2, 0, 1}, s.Values)
	})
	errs := []struct{ name, in, err string }{
		{"bad header", "TIMESTAMP,Context,GeneratedTokens\n", `llm.csv:1: header: column 2 is "Context"`},
		{"no rows", header, "llm.csv: no request rows"},
		{"bad time", header + "2023-11-16T18:17:03,1,1\n", `llm.csv:2:1: column "TIMESTAMP": "2023-11-16T18:17:03" is not a timestamp`},
		{"bad tokens", header + "2023-11-16 18:17:03,x,1\n", `llm.csv:2:21: column "ContextTokens": "x" is not a non-negative integer`},
		{"negative tokens", header + "2023-11-16 18:17:03,1,-1\n", `llm.csv:2:23: column "GeneratedTokens": "-1"`},
		{"span too long", header + "2023-11-16 18:17:03,1,1\n2063-11-16 18:17:03,1,1\n", "llm.csv: requests span"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadAzureLLM(strings.NewReader(tt.in), "llm.csv")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
		})
	}
}

func TestBinArrivals(t *testing.T) {
	s, err := BinArrivals("x", []time.Duration{5 * time.Second, 2 * time.Second, 2 * time.Second, 4 * time.Second}, 2*time.Second)
	require.NoError(t, err)
	assert.Equal(t, []float64{2, 2}, s.Values, "bins start at the earliest arrival: [2,4) and [4,6)")
	_, err = BinArrivals("x", nil, time.Second)
	assert.ErrorContains(t, err, "x: no arrivals")
	_, err = BinArrivals("x", []time.Duration{0}, 0)
	assert.ErrorContains(t, err, "bin step 0s must be positive")
	_, err = BinArrivals("x", []time.Duration{0, 1000 * time.Hour * 1000}, time.Millisecond)
	assert.ErrorContains(t, err, "use a longer step")
}
