package progress

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStart(t *testing.T) {
	var nilBar Bar
	set, end := nilBar.Start("x", 3)
	set(1) // a nil bar ignores its progress
	end()

	var got []int
	var label string
	b := Bar(func(l string, total int) (func(int), func()) {
		label = l
		return func(d int) { got = append(got, d) }, func() { got = append(got, -total) }
	})
	set, end = b.Start("train", 5)
	set(2)
	set(5)
	end()
	assert.Equal(t, "train", label)
	assert.Equal(t, []int{2, 5, -5}, got)
}
