// Package forwarded decides who the client of a request is when it came
// through proxies: from the peer address, the X-Forwarded-For and Forwarded
// headers, and the set of proxies trusted to have written them. The reverse
// proxy uses it to build the headers it forwards; the gateway uses it to
// key rate limits and apply allow/deny lists.
//
// It allocates nothing and imports nothing of the project.
package forwarded

import (
	"bytes"
	"net"
	"net/netip"
	"unsafe"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// Peer returns the IP address of a connection's remote end, IPv4 unmapped;
// the zero Addr when it has none.
func Peer(a net.Addr) netip.Addr {
	switch t := a.(type) {
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(t.IP)
		return ip.Unmap()
	case *net.UDPAddr:
		ip, _ := netip.AddrFromSlice(t.IP)
		return ip.Unmap()
	}
	if a == nil {
		return netip.Addr{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// Trusted reports whether addr is in one of the prefixes.
func Trusted(addr netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Client returns the client's address: peer itself unless peer is a
// trusted proxy, in which case the X-Forwarded-For list (xff), or failing
// that the Forwarded header's for= values (fwd), is walked from the right
// past trusted proxies to the first address that is not one. Entries that
// do not parse (obfuscated identifiers, "unknown") stop the walk there.
func Client(peer netip.Addr, xff, fwd []byte, trusted []netip.Prefix) netip.Addr {
	if len(trusted) == 0 || !Trusted(peer, trusted) {
		return peer
	}
	client := peer
	if len(xff) > 0 {
		for rest := xff; len(rest) > 0; {
			var item []byte
			if i := bytes.LastIndexByte(rest, ','); i >= 0 {
				item, rest = rest[i+1:], rest[:i]
			} else {
				item, rest = rest, nil
			}
			a, ok := ParseNode(ascii.TrimOWS(item))
			if !ok {
				return client
			}
			client = a
			if !Trusted(a, trusted) {
				return a
			}
		}
		return client
	}
	for rest := fwd; len(rest) > 0; {
		var elem []byte
		if i := bytes.LastIndexByte(rest, ','); i >= 0 {
			elem, rest = rest[i+1:], rest[:i]
		} else {
			elem, rest = rest, nil
		}
		v := param(elem, "for")
		if v == nil {
			continue
		}
		a, ok := ParseNode(v)
		if !ok {
			return client
		}
		client = a
		if !Trusted(a, trusted) {
			return a
		}
	}
	return client
}

// ParseNode parses one address as it appears in X-Forwarded-For or a
// Forwarded for= value: "192.0.2.1", "192.0.2.1:80", "2001:db8::1",
// "[2001:db8::1]:80", optionally in double quotes. Zones are refused.
func ParseNode(b []byte) (netip.Addr, bool) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = b[1 : len(b)-1]
	}
	if len(b) == 0 || bytes.IndexByte(b, '%') >= 0 {
		return netip.Addr{}, false
	}
	s := unsafe.String(unsafe.SliceData(b), len(b)) // not kept: no zone
	if b[0] == '[' {
		if i := bytes.IndexByte(b, ']'); i > 0 {
			a, err := netip.ParseAddr(s[1:i])
			return a.Unmap(), err == nil
		}
		return netip.Addr{}, false
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// param returns the value of name in one Forwarded element
// ("for=1.2.3.4;proto=http"), quotes kept, or nil.
func param(elem []byte, name string) []byte {
	for len(elem) > 0 {
		var pair []byte
		if i := bytes.IndexByte(elem, ';'); i >= 0 {
			pair, elem = elem[:i], elem[i+1:]
		} else {
			pair, elem = elem, nil
		}
		pair = ascii.TrimOWS(pair)
		if eq := bytes.IndexByte(pair, '='); eq == len(name) && bytes.EqualFold(pair[:eq], []byte(name)) {
			return ascii.TrimOWS(pair[eq+1:])
		}
	}
	return nil
}

// AppendNode appends addr as a Forwarded node value (RFC 7239, section
// 6): IPv4 as is, IPv6 in brackets and quotes.
func AppendNode(dst []byte, addr netip.Addr) []byte {
	if addr.Is6() {
		dst = append(dst, `"[`...)
		dst = addr.AppendTo(dst)
		return append(dst, `]"`...)
	}
	return addr.AppendTo(dst)
}

// AppendValue appends v as a Forwarded parameter value: a token as is,
// anything else as a quoted string.
func AppendValue(dst, v []byte) []byte {
	token := len(v) > 0
	for _, c := range v {
		if !isTokenChar(c) {
			token = false
			break
		}
	}
	if token {
		return append(dst, v...)
	}
	dst = append(dst, '"')
	for _, c := range v {
		if c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
