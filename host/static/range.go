package static

import (
	"math"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// maxRanges is the most ranges one request may ask for; a Range header
// with more is ignored and the whole representation is sent (200), which
// defuses "many small overlapping ranges" amplification.
const maxRanges = 16

// byteRange is a satisfiable range, end inclusive.
type byteRange struct{ start, end int64 }

func (r byteRange) length() int64 { return r.end - r.start + 1 }

type rangeStatus uint8

const (
	rangeIgnore        rangeStatus = iota // no usable Range: send 200 with the whole body
	rangeOK                               // send 206 with the ranges
	rangeUnsatisfiable                    // send 416 with Content-Range: bytes */size
)

// parseRange parses a Range header (RFC 9110 §14.2) for a representation
// of size bytes into out, without allocating. Invalid syntax, a unit
// other than "bytes" and more than maxRanges ranges are ignored, as the
// RFC allows. Unsatisfiable ranges are dropped; when none is left the
// answer is rangeUnsatisfiable. Overlapping or adjacent ranges are merged
// (in ascending order); otherwise the client's order is kept.
func parseRange(h []byte, size int64, out *[maxRanges]byteRange) (int, rangeStatus) {
	const unit = "bytes="
	if len(h) < len(unit) {
		return 0, rangeIgnore
	}
	for i := 0; i < len(unit); i++ {
		if ascii.Lower(h[i]) != unit[i] {
			return 0, rangeIgnore
		}
	}
	h = h[len(unit):]
	n, specs := 0, 0
	for len(h) > 0 {
		// One element of the comma-separated list.
		var el []byte
		el, h = cutByte(h, ',')
		el = ascii.TrimOWS(el)
		if len(el) == 0 {
			continue
		}
		specs++
		if specs > maxRanges {
			return 0, rangeIgnore
		}
		var r byteRange
		if el[0] == '-' {
			suffix, rest, ok := digits(el[1:])
			if !ok || len(rest) != 0 {
				return 0, rangeIgnore
			}
			if suffix == 0 || size == 0 {
				continue // unsatisfiable
			}
			r = byteRange{max(0, size-suffix), size - 1}
		} else {
			first, rest, ok := digits(el)
			if !ok || len(rest) == 0 || rest[0] != '-' {
				return 0, rangeIgnore
			}
			last := int64(math.MaxInt64)
			if rest = rest[1:]; len(rest) > 0 {
				if last, rest, ok = digits(rest); !ok || len(rest) != 0 || last < first {
					return 0, rangeIgnore
				}
			}
			if first >= size {
				continue // unsatisfiable
			}
			r = byteRange{first, min(last, size-1)}
		}
		out[n] = r
		n++
	}
	if specs == 0 {
		return 0, rangeIgnore
	}
	if n == 0 {
		return 0, rangeUnsatisfiable
	}
	return coalesce(out[:n]), rangeOK
}

// coalesce merges overlapping or adjacent ranges in place and returns how
// many are left. Ranges that neither overlap nor touch keep their order.
func coalesce(rs []byteRange) int {
	overlap := false
	for i := 0; i < len(rs) && !overlap; i++ {
		for j := i + 1; j < len(rs); j++ {
			if rs[i].start <= rs[j].end+1 && rs[j].start <= rs[i].end+1 {
				overlap = true
				break
			}
		}
	}
	if !overlap {
		return len(rs)
	}
	for i := 1; i < len(rs); i++ { // insertion sort: at most maxRanges
		for j := i; j > 0 && rs[j].start < rs[j-1].start; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	w := 0
	for i := 1; i < len(rs); i++ {
		if rs[i].start <= rs[w].end+1 {
			rs[w].end = max(rs[w].end, rs[i].end)
			continue
		}
		w++
		rs[w] = rs[i]
	}
	return w + 1
}

// digits parses a run of at least one decimal digit, saturating at
// math.MaxInt64, and returns what follows it.
func digits(b []byte) (int64, []byte, bool) {
	var v int64
	i := 0
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		d := int64(b[i] - '0')
		if v > (math.MaxInt64-d)/10 {
			v = math.MaxInt64
		} else {
			v = v*10 + d
		}
	}
	return v, b[i:], i > 0
}

func cutByte(b []byte, sep byte) (before, after []byte) {
	for i, c := range b {
		if c == sep {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}
