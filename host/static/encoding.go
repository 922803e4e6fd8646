package static

import (
	"fmt"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// Content codings, in no particular order; preference is configured.
const (
	encBr = iota
	encZstd
	encGzip
	nEnc
	encIdentity = -1
)

var encodings = [nEnc]struct {
	name    string // Options value and Content-Encoding token
	ext     string // precompressed sidecar suffix
	altName string // another token that means the same coding
}{
	encBr:   {"br", ".br", ""},
	encZstd: {"zstd", ".zst", ""},
	encGzip: {"gzip", ".gz", "x-gzip"},
}

// encodingList maps configured names to codings, refusing unknown ones
// and repeats.
func encodingList(field string, names []string) ([]int, error) {
	var out []int
	seen := [nEnc]bool{}
	for _, n := range names {
		e := -2
		for i, c := range encodings {
			if n == c.name {
				e = i
			}
		}
		if e < 0 {
			return nil, fmt.Errorf("%s: unknown encoding %q (want br, zstd or gzip)", field, n)
		}
		if seen[e] {
			return nil, fmt.Errorf("%s: encoding %q listed twice", field, n)
		}
		seen[e] = true
		out = append(out, e)
	}
	return out, nil
}

// acceptEncoding holds the q-values of an Accept-Encoding header, in
// thousandths; -1 means the coding is not mentioned.
type acceptEncoding struct {
	q        [nEnc]int16
	identity int16
	star     int16
}

// parseAcceptEncoding parses an Accept-Encoding header without
// allocating. Elements with a malformed q-value are ignored.
func parseAcceptEncoding(h []byte) acceptEncoding {
	a := acceptEncoding{q: [nEnc]int16{-1, -1, -1}, identity: -1, star: -1}
	for len(h) > 0 {
		var el []byte
		el, h = cutByte(h, ',')
		tok, params := cutByte(el, ';')
		tok = ascii.TrimOWS(tok)
		if len(tok) == 0 {
			continue
		}
		q := int16(1000)
		for len(params) > 0 {
			var p []byte
			p, params = cutByte(params, ';')
			p = ascii.TrimOWS(p)
			if len(p) >= 2 && ascii.Lower(p[0]) == 'q' && p[1] == '=' {
				var ok bool
				if q, ok = parseQ(ascii.TrimOWS(p[2:])); !ok {
					q = -2
				}
			}
		}
		if q == -2 {
			continue
		}
		switch {
		case len(tok) == 1 && tok[0] == '*':
			a.star = q
		case ascii.EqualFold(tok, "identity"):
			a.identity = q
		default:
			for i, c := range encodings {
				if ascii.EqualFold(tok, c.name) || (c.altName != "" && ascii.EqualFold(tok, c.altName)) {
					a.q[i] = q
				}
			}
		}
	}
	return a
}

// parseQ parses a qvalue ("0", "0.5", "1.000") into thousandths.
func parseQ(b []byte) (int16, bool) {
	if len(b) == 0 || (b[0] != '0' && b[0] != '1') {
		return 0, false
	}
	v := int16(b[0]-'0') * 1000
	if len(b) == 1 {
		return v, true
	}
	if b[1] != '.' || len(b) > 5 {
		return 0, false
	}
	scale := int16(100)
	for _, c := range b[2:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v += int16(c-'0') * scale
		scale /= 10
	}
	if v > 1000 {
		return 0, false
	}
	return v, true
}

// weight is the q-value the client gives coding e (encIdentity for
// identity), applying "*" and identity's implicit acceptability.
func (a *acceptEncoding) weight(e int) int16 {
	if e == encIdentity {
		switch {
		case a.identity >= 0:
			return a.identity
		case a.star >= 0:
			return a.star
		}
		// Acceptable but unrated: any coding the client rates above 0
		// is preferred, as browsers expect.
		return 1
	}
	switch {
	case a.q[e] >= 0:
		return a.q[e]
	case a.star >= 0:
		return a.star
	}
	return 0
}

// choose returns the index in cands (codings in server preference order)
// of the coding to send, or -1 for identity: the highest q-value wins,
// ties go to the server's order, and a coding beats identity when the
// client rates it at least as high (identity not named in the header
// counts as rated lowest).
func (a *acceptEncoding) choose(cands []int8) int {
	best, bestQ := -1, int16(0)
	for i, e := range cands {
		if q := a.weight(int(e)); q > bestQ {
			best, bestQ = i, q
		}
	}
	if best >= 0 && bestQ < a.weight(encIdentity) {
		return -1
	}
	return best
}
