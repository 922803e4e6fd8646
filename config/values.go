package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// sizeUnits lists the accepted size units and their bytes.
var sizeUnits = []struct {
	name  string
	bytes int64
}{
	{"B", 1},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"TB", 1000 * 1000 * 1000 * 1000},
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
}

const sizeUnitList = "B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)"

// ParseSize parses a size with a unit, like "16MiB", "512KB" or "100B", into
// bytes. The number may have a fraction ("1.5GiB"); the result is rounded
// up to a whole byte. A bare number, a negative number or an unknown unit
// is an error.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == '-' || t[i] == '+') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if num == "" {
		return 0, fmt.Errorf("%q is not a size; write a number and a unit, like \"16MiB\" (units: %s)", s, sizeUnitList)
	}
	if strings.HasPrefix(num, "-") {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	if unit == "" {
		return 0, fmt.Errorf("size %q has no unit; write it like \"%sKiB\" or \"%sB\" (units: %s)", s, num, num, sizeUnitList)
	}
	var mult int64
	for _, u := range sizeUnits {
		if u.name == unit {
			mult = u.bytes
		}
	}
	if mult == 0 {
		hint := ""
		for _, u := range sizeUnits {
			if strings.EqualFold(u.name, unit) {
				hint = fmt.Sprintf("; did you mean %q?", num+u.name)
				break
			}
		}
		return 0, fmt.Errorf("unknown size unit %q in %q (units: %s)%s", unit, s, sizeUnitList, hint)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size; write a number and a unit, like \"16MiB\"", s)
	}
	v := math.Ceil(f * float64(mult))
	if v >= math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

const durationUnitList = "ns, us, ms, s, m, h"

// ParseDuration parses a duration with units, like "5s", "100ms" or "1h30m".
// Unlike time.ParseDuration, a bare number (even "0") is an error, and so is
// a negative duration.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty duration; write a number and a unit, like \"5s\" (units: %s)", durationUnitList)
	}
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return 0, fmt.Errorf("duration %q has no unit; write it like \"%ss\" or \"%sms\" (units: %s)", s, t, t, durationUnitList)
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; write a number and a unit, like \"5s\" or \"1m30s\" (units: %s)", s, durationUnitList)
	}
	return d, nil
}

// ParseRate parses a rate like "100/s", "6000/m" or "10/h" into events per
// second.
func ParseRate(s string) (float64, error) {
	num, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("%q is not a rate; write a count per unit, like \"100/s\", \"6000/m\" or \"10/h\"", s)
	}
	num, per = strings.TrimSpace(num), strings.TrimSpace(per)
	var secs float64
	switch per {
	case "s":
		secs = 1
	case "m":
		secs = 60
	case "h":
		secs = 3600
	default:
		return 0, fmt.Errorf("unknown rate unit %q in %q; use \"/s\", \"/m\" or \"/h\"", per, s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a rate; write a count per unit, like \"100/s\"", s)
	}
	if f <= 0 {
		return 0, fmt.Errorf("rate %q must be above zero", s)
	}
	return f / secs, nil
}

// checkListenAddr reports what is wrong with a "host:port" listen address,
// or returns nil.
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if !strings.Contains(addr, ":") {
			return fmt.Errorf("listen address %q has no port; write \"%s:8080\" or \":8080\"", addr, addr)
		}
		return fmt.Errorf("%q is not a listen address; write \"host:port\", like \":8080\" or \"127.0.0.1:8080\"", addr)
	}
	p, err := strconv.Atoi(port)
	if err != nil || port == "" || port[0] == '+' || port[0] == '-' {
		return fmt.Errorf("port %q in %q is not a number", port, addr)
	}
	if p < 1 || p > 65535 {
		return fmt.Errorf("port %d in %q is out of range; ports are 1-65535", p, addr)
	}
	if host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if strings.Contains(addr, "[") {
		return fmt.Errorf("host %q in %q is not an IP address", host, addr)
	}
	if !validHostName(host) {
		return fmt.Errorf("host %q in %q is neither an IP address nor a host name", host, addr)
	}
	return nil
}

// validHostName reports whether s is a DNS name: dot-separated labels of
// letters, digits and hyphens, not starting or ending with a hyphen.
func validHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// checkSiteName reports what is wrong with a site name or alias.
func checkSiteName(s string) error {
	switch {
	case s == "*" || s == "_":
		return nil
	case strings.Contains(s, "://"):
		return fmt.Errorf("site name %q must be a host name, not a URL; the scheme comes from tls and the port from listen", s)
	case strings.Contains(s, "/"):
		return fmt.Errorf("site name %q must be a host name without a path", s)
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return nil
	}
	if _, _, err := net.SplitHostPort(s); err == nil {
		return fmt.Errorf("site name %q must be a host name without a port; put the port in listen", s)
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok && validHostName(rest) {
		return nil
	}
	if !validHostName(s) {
		return fmt.Errorf("site name %q is not a host name; use letters, digits, \"-\" and \".\", \"*.\" in front for a wildcard, or \"*\" for every name", s)
	}
	return nil
}

// checkCIDR accepts an IP address or a CIDR prefix.
func checkCIDR(s string) error {
	if strings.Contains(s, "/") {
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("%q is not a CIDR prefix, like \"10.0.0.0/8\" or \"2001:db8::/32\"", s)
		}
		return nil
	}
	if _, err := netip.ParseAddr(s); err != nil {
		return fmt.Errorf("%q is neither an IP address nor a CIDR prefix, like \"10.0.0.0/8\"", s)
	}
	return nil
}

// checkHeaderName reports whether s is an HTTP header field name (a token).
func checkHeaderName(s string) error {
	if s == "" {
		return fmt.Errorf("empty header name")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return fmt.Errorf("%q is not a valid header name", s)
	}
	return nil
}

// checkHeaderValue rejects values that would break the header framing.
// A secret value (from env() or file()) is not quoted in the message.
func checkHeaderValue(s string, hidden bool) error {
	if !strings.ContainsAny(s, "\r\n\x00") {
		return nil
	}
	if hidden {
		return fmt.Errorf("header value from env() or file() contains a line break or NUL (trimspace() removes a final newline)")
	}
	return fmt.Errorf("header value %q contains a line break or NUL", s)
}

// suggest returns the candidate closest to s by edit distance when it is
// close enough to be a likely typo, else "".
func suggest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(s), strings.ToLower(c))
		limit := max(1, min(3, utf8.RuneCountInString(c)/3))
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// didYouMean formats suggest's answer as a sentence, or "".
func didYouMean(s string, candidates []string) string {
	if m := suggest(s, candidates); m != "" {
		return fmt.Sprintf(" Did you mean %q?", m)
	}
	return ""
}

// levenshtein is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours cost one.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }

// quoteList renders names as `"a", "b" or "c"`.
func quoteList(names []string) string { return quoteJoin(names, "or") }

// plainJoin renders names as `a, b CONJ c`.
func plainJoin(names []string, conj string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

// quoteJoin renders names as `"a", "b" CONJ "c"`.
func quoteJoin(names []string, conj string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			if i == len(names)-1 {
				b.WriteString(" " + conj + " ")
			} else {
				b.WriteString(", ")
			}
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}
