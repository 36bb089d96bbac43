package telemetry

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// The Prometheus client's generic decoder (model.Vector: a map of labels
// per sample, decoded twice over) costs about 40 allocations per series;
// a snapshot of 3000 pods has ~90 000 series. decodeQueryResponse reads an
// instant-query response in one pass and keeps only the labels a snapshot
// uses, interned, so a round stays cheap at cluster scale. Its output is
// checked against the client's decoder in the tests.

// vecSample is one element of an instant vector, reduced to the labels the
// snapshot reads.
type vecSample struct {
	namespace, pod, container, resource, le, source string
	value                                           float64
}

// queryResponse is a decoded /api/v1/query response.
type queryResponse struct {
	status, errorType, errMsg string
	resultType                string
	samples                   []vecSample
	warnings                  []string
}

// maxDepth bounds the nesting skipValue follows.
const maxDepth = 256

// scanner reads JSON from b.
type scanner struct {
	b      []byte
	i      int
	intern map[string]string
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("bad response JSON at byte %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.i >= len(s.b) {
			return s.errorf("unexpected end, want %q", c)
		}
		return s.errorf("found %q, want %q", s.b[s.i], c)
	}
	s.i++
	return nil
}

// rawString reads a string and returns its bytes between the quotes and
// whether it holds escapes.
func (s *scanner) rawString() ([]byte, bool, error) {
	if err := s.expect('"'); err != nil {
		return nil, false, err
	}
	start, escaped := s.i, false
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], escaped, nil
		case c == '\\':
			escaped = true
			s.i += 2
		case c < 0x20:
			return nil, false, s.errorf("control character in string")
		default:
			s.i++
		}
	}
	return nil, false, s.errorf("unterminated string")
}

// str reads a string value, interned.
func (s *scanner) str() (string, error) {
	start := s.i
	raw, escaped, err := s.rawString()
	if err != nil {
		return "", err
	}
	if escaped {
		var v string
		if err := json.Unmarshal(s.b[s.ws0(start):s.i], &v); err != nil {
			return "", s.errorf("string: %v", err)
		}
		raw = []byte(v)
	}
	if v, ok := s.intern[string(raw)]; ok {
		return v, nil
	}
	v := string(raw)
	s.intern[v] = v
	return v, nil
}

// ws0 returns the index of the first non-space byte at or after i.
func (s *scanner) ws0(i int) int {
	for i < len(s.b) && (s.b[i] == ' ' || s.b[i] == '\t' || s.b[i] == '\n' || s.b[i] == '\r') {
		i++
	}
	return i
}

// object calls field for each key of an object; field must consume the
// value.
func (s *scanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, escaped, err := s.rawString()
		if err != nil {
			return err
		}
		if escaped { // no key this decoder looks for has escapes
			key = nil
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("want , or } in object")
		}
	}
}

// array calls elem for each element of an array; elem must consume it.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("want , or ] in array")
		}
	}
}

// skip consumes any value.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return s.errorf("nested too deep")
	}
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case c == '[':
		return s.array(func() error { return s.skip(depth + 1) })
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.number()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == 0:
		return s.errorf("unexpected end")
	default:
		return s.errorf("unexpected %q", c)
	}
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return s.errorf("want %s", lit)
	}
	s.i += len(lit)
	return nil
}

func (s *scanner) number() (float64, error) {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	v, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil || start == s.i {
		return 0, s.errorf("bad number %q", s.b[start:s.i])
	}
	return v, nil
}

func (s *scanner) strings() ([]string, error) {
	var out []string
	if s.peek() == 'n' {
		return nil, s.literal("null")
	}
	err := s.array(func() error {
		v, err := s.str()
		out = append(out, v)
		return err
	})
	return out, err
}

// decodeQueryResponse decodes an instant-query response; samples are read
// only for resultType "vector". Native-histogram samples are skipped: the
// snapshot reads classic buckets.
func decodeQueryResponse(body []byte) (queryResponse, error) {
	s := &scanner{b: body, intern: map[string]string{}}
	var r queryResponse
	err := s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "status":
			r.status, err = s.str()
		case "errorType":
			r.errorType, err = s.str()
		case "error":
			r.errMsg, err = s.str()
		case "warnings":
			r.warnings, err = s.strings()
		case "data":
			err = s.data(&r)
		default:
			err = s.skip(0)
		}
		return err
	})
	if err != nil {
		return r, err
	}
	if s.peek() != 0 {
		return r, s.errorf("data after the response object")
	}
	return r, nil
}

func (s *scanner) data(r *queryResponse) error {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	result := -1 // offset of "result" when it came before "resultType"
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "resultType":
			var err error
			r.resultType, err = s.str()
			return err
		case "result":
			if r.resultType == "vector" {
				return s.vector(r)
			}
			result = s.ws0(s.i)
			return s.skip(0)
		default:
			return s.skip(0)
		}
	})
	if err != nil || result < 0 || r.resultType != "vector" {
		return err
	}
	end := s.i
	s.i = result
	err = s.vector(r)
	s.i = end
	return err
}

func (s *scanner) vector(r *queryResponse) error {
	return s.array(func() error {
		var v vecSample
		hasValue := false
		err := s.object(func(key []byte) error {
			switch string(key) {
			case "metric":
				return s.labels(&v)
			case "value":
				hasValue = true
				return s.value(&v)
			default: // "histogram" (native histograms) and anything new
				return s.skip(0)
			}
		})
		if err == nil && hasValue {
			r.samples = append(r.samples, v)
		}
		return err
	})
}

func (s *scanner) labels(v *vecSample) error {
	return s.object(func(key []byte) error {
		var dst *string
		switch string(key) {
		case "namespace":
			dst = &v.namespace
		case "pod":
			dst = &v.pod
		case "container":
			dst = &v.container
		case "resource":
			dst = &v.resource
		case "le":
			dst = &v.le
		case "source":
			dst = &v.source
		default:
			return s.skip(0)
		}
		var err error
		*dst, err = s.str()
		return err
	})
}

// value reads [timestamp, "value"].
func (s *scanner) value(v *vecSample) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if _, err := s.number(); err != nil {
		return err
	}
	if err := s.expect(','); err != nil {
		return err
	}
	raw, escaped, err := s.rawString()
	if err != nil {
		return err
	}
	if escaped {
		return s.errorf("escaped sample value")
	}
	if v.value, err = strconv.ParseFloat(string(raw), 64); err != nil {
		return s.errorf("sample value %q: %v", raw, err)
	}
	return s.expect(']')
}
