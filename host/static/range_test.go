package static

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	cases := []struct {
		h    string
		size int64
		st   rangeStatus
		want string
	}{
		{"bytes=0-0", 10, rangeOK, "0-0"},
		{"bytes=0-", 10, rangeOK, "0-9"},
		{"bytes=-1", 10, rangeOK, "9-9"},
		{"bytes=-20", 10, rangeOK, "0-9"},
		{"bytes=5-100", 10, rangeOK, "5-9"},
		{"BYTES=1-2", 10, rangeOK, "1-2"},
		{"bytes=1-2,4-5", 10, rangeOK, "1-2 4-5"},
		{"bytes=4-5,1-2", 10, rangeOK, "4-5 1-2"},
		{"bytes=4-6,1-4", 10, rangeOK, "1-6"},
		{"bytes=0-1,2-3,-2", 10, rangeOK, "0-3 8-9"},
		{"bytes=0-,-5", 10, rangeOK, "0-9"},
		{"bytes=  1-2 ,\t3-4\t", 10, rangeOK, "1-4"},
		{"bytes=1-2,,", 10, rangeOK, "1-2"},
		{"bytes=10-", 10, rangeUnsatisfiable, ""},
		{"bytes=-0", 10, rangeUnsatisfiable, ""},
		{"bytes=10-20,30-", 10, rangeUnsatisfiable, ""},
		{"bytes=0-", 0, rangeUnsatisfiable, ""},
		{"bytes=-5", 0, rangeUnsatisfiable, ""},
		{"bytes=99999999999999999999-", 10, rangeUnsatisfiable, ""},
		{"bytes=1-99999999999999999999", 10, rangeOK, "1-9"},
		{"bytes=5-4", 10, rangeIgnore, ""},
		{"bytes=", 10, rangeIgnore, ""},
		{"bytes=,", 10, rangeIgnore, ""},
		{"bytes=-", 10, rangeIgnore, ""},
		{"bytes=a-", 10, rangeIgnore, ""},
		{"bytes=1-a", 10, rangeIgnore, ""},
		{"bytes=1", 10, rangeIgnore, ""},
		{"bytes=--1", 10, rangeIgnore, ""},
		{"bytes=+1-2", 10, rangeIgnore, ""},
		{"bytes 1-2", 10, rangeIgnore, ""},
		{"items=1-2", 10, rangeIgnore, ""},
		{"", 10, rangeIgnore, ""},
		{"bytes=" + strings.Repeat("1-1,", 16), 10, rangeOK, "1-1"},
		{"bytes=" + strings.Repeat("1-1,", 17), 10, rangeIgnore, ""},
	}
	for _, c := range cases {
		var rs [maxRanges]byteRange
		n, st := parseRange([]byte(c.h), c.size, &rs)
		var got []string
		for _, r := range rs[:n] {
			got = append(got, fmt.Sprintf("%d-%d", r.start, r.end))
		}
		if st != c.st || strings.Join(got, " ") != c.want {
			t.Errorf("parseRange(%q, %d) = %q, %d; want %q, %d", c.h, c.size, got, st, c.want, c.st)
		}
	}
}

// FuzzParseRange checks that every range returned is satisfiable, that
// there are at most maxRanges of them and that none overlap or touch.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=-5", "bytes=5-", "bytes=0-1,3-4,-2", "bytes=9-1", "bytes=0-1,0-1", "BYTES= 1 - 2"} {
		f.Add(s, int64(10))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
			if size < 0 {
				size = 0
			}
		}
		var rs [maxRanges]byteRange
		n, st := parseRange([]byte(h), size, &rs)
		if st != rangeOK {
			if n != 0 {
				t.Fatalf("%q: status %d with %d ranges", h, st, n)
			}
			return
		}
		if n < 1 || n > maxRanges {
			t.Fatalf("%q: %d ranges", h, n)
		}
		for i, r := range rs[:n] {
			if r.start < 0 || r.start > r.end || r.end >= size {
				t.Fatalf("%q size %d: range %d is %d-%d", h, size, i, r.start, r.end)
			}
			for j, o := range rs[:n] {
				if i != j && r.start <= o.end+1 && o.start <= r.end+1 {
					t.Fatalf("%q: ranges %d and %d overlap or touch", h, i, j)
				}
			}
		}
	})
}
