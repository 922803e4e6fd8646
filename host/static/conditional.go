package static

import (
	"net/http"
	"time"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// precondition evaluates the conditional request headers of RFC 9110
// §13.2.2 in their order of precedence against a representation's
// validators (etag is strong and quoted; lastMod is its http-date and
// modSec the same instant in Unix seconds). It returns 0 to go on, 304
// (Not Modified) or 412 (Precondition Failed). Only GET and HEAD reach
// here, so a matching If-None-Match always means 304.
func precondition(x headerGetter, etag, lastMod []byte, modSec int64) int {
	if v := x.RequestHeader("If-Match"); v != nil {
		if !etagListMatch(v, etag, false) {
			return http.StatusPreconditionFailed
		}
	} else if v := x.RequestHeader("If-Unmodified-Since"); v != nil {
		if t, ok := parseHTTPDate(v, lastMod); ok && modSec > t {
			return http.StatusPreconditionFailed
		}
	}
	if v := x.RequestHeader("If-None-Match"); v != nil {
		if etagListMatch(v, etag, true) {
			return http.StatusNotModified
		}
	} else if v := x.RequestHeader("If-Modified-Since"); v != nil {
		if t, ok := parseHTTPDate(v, lastMod); ok && modSec <= t {
			return http.StatusNotModified
		}
	}
	return 0
}

// headerGetter is the part of exchange.Exchange that precondition needs.
type headerGetter interface {
	RequestHeader(name string) []byte
}

// ifRange reports whether an If-Range value (RFC 9110 §13.1.5) still
// describes the representation, so that Range applies. An entity-tag must
// match strongly; a date must equal Last-Modified exactly.
func ifRange(v, etag, lastMod []byte, modSec int64) bool {
	v = ascii.TrimOWS(v)
	if len(v) > 0 && (v[0] == '"' || v[0] == 'W') {
		return len(v) >= 2 && v[0] == '"' && string(v) == string(etag)
	}
	t, ok := parseHTTPDate(v, lastMod)
	return ok && t == modSec
}

// etagListMatch reports whether a comma-separated list of entity-tags
// (If-Match, If-None-Match) contains etag, or is "*". weak selects the weak
// comparison (W/ prefixes ignored); the strong one never matches a weak
// tag. A malformed list matches nothing.
func etagListMatch(list, etag []byte, weak bool) bool {
	for {
		for len(list) > 0 && (list[0] == ' ' || list[0] == '\t' || list[0] == ',') {
			list = list[1:]
		}
		if len(list) == 0 {
			return false
		}
		if list[0] == '*' {
			return true
		}
		isWeak := false
		if len(list) >= 2 && list[0] == 'W' && list[1] == '/' {
			isWeak, list = true, list[2:]
		}
		if len(list) == 0 || list[0] != '"' {
			return false
		}
		end := 1
		for end < len(list) && list[end] != '"' {
			end++
		}
		if end == len(list) {
			return false
		}
		tag := list[:end+1]
		list = list[end+1:]
		if (weak || !isWeak) && string(tag) == string(etag) {
			return true
		}
	}
}

// parseHTTPDate parses an HTTP date into Unix seconds. The common case,
// a client echoing our own Last-Modified (same), costs one comparison;
// IMF-fixdate is parsed without allocating; the two obsolete formats go
// through net/http.
func parseHTTPDate(v, same []byte) (int64, bool) {
	v = ascii.TrimOWS(v)
	if len(same) > 0 && string(v) == string(same) {
		if t, ok := parseIMFFixdate(same); ok {
			return t, true
		}
	}
	if t, ok := parseIMFFixdate(v); ok {
		return t, true
	}
	t, err := http.ParseTime(string(v))
	if err != nil {
		return 0, false
	}
	return t.Unix(), true
}

// parseIMFFixdate parses "Sun, 06 Nov 1994 08:49:37 GMT".
func parseIMFFixdate(v []byte) (int64, bool) {
	if len(v) != 29 || v[3] != ',' || v[4] != ' ' || v[7] != ' ' || v[11] != ' ' ||
		v[16] != ' ' || v[19] != ':' || v[22] != ':' || v[25] != ' ' || string(v[26:]) != "GMT" {
		return 0, false
	}
	num := func(b []byte) (int, bool) {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	day, ok1 := num(v[5:7])
	year, ok2 := num(v[12:16])
	hh, ok3 := num(v[17:19])
	mm, ok4 := num(v[20:22])
	ss, ok5 := num(v[23:25])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60 {
		return 0, false
	}
	month := 0
	for i := 0; i < 12; i++ {
		if string(v[8:11]) == monthNames[i*3:i*3+3] {
			month = i + 1
			break
		}
	}
	if month == 0 {
		return 0, false
	}
	return time.Date(year, time.Month(month), day, hh, mm, ss, 0, time.UTC).Unix(), true
}

const monthNames = "JanFebMarAprMayJunJulAugSepOctNovDec"
