package gateway

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// ACL allows or denies client addresses by lists of addresses and CIDR
// prefixes. Deny wins; when the allow list is not empty, only addresses on
// it pass. Lookups are binary searches over merged ranges and allocate
// nothing.
type ACL struct {
	allow, deny []span
	// TrustedProxies are peers whose X-Forwarded-For is believed when Wrap
	// decides the client address. Set it before use.
	TrustedProxies []netip.Prefix
}

// span is an inclusive address range, IPv4 as IPv4-mapped IPv6.
type span struct{ lo, hi netip.Addr }

// NewACL parses the lists: each entry an address ("192.0.2.7", "::1") or a
// prefix ("10.0.0.0/8", "2001:db8::/32").
func NewACL(allow, deny []string) (*ACL, error) {
	a := &ACL{}
	var err error
	if a.allow, err = spans(allow); err != nil {
		return nil, fmt.Errorf("acl: allow: %w", err)
	}
	if a.deny, err = spans(deny); err != nil {
		return nil, fmt.Errorf("acl: deny: %w", err)
	}
	return a, nil
}

func spans(list []string) ([]span, error) {
	var out []span
	for _, s := range list {
		s = strings.TrimSpace(s)
		var p netip.Prefix
		if strings.Contains(s, "/") {
			var err error
			if p, err = netip.ParsePrefix(s); err != nil {
				return nil, err
			}
		} else {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, err
			}
			if a.Zone() != "" {
				return nil, fmt.Errorf("%q: zones are not allowed", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		p = p.Masked()
		lo := p.Addr()
		bits := p.Bits()
		if lo.Is4() {
			lo = netip.AddrFrom16(lo.As16())
			bits += 96
		}
		hi := lastAddr(lo, bits)
		out = append(out, span{lo, hi})
	}
	slices.SortFunc(out, func(a, b span) int { return a.lo.Compare(b.lo) })
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			if next := last.hi.Next(); s.lo.Compare(last.hi) <= 0 || (next.IsValid() && s.lo == next) {
				if s.hi.Compare(last.hi) > 0 {
					last.hi = s.hi
				}
				continue
			}
		}
		merged = append(merged, s)
	}
	return merged, nil
}

func lastAddr(lo netip.Addr, bits int) netip.Addr {
	b := lo.As16()
	for i := bits; i < 128; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	return netip.AddrFrom16(b)
}

func contains(list []span, a netip.Addr) bool {
	i, _ := slices.BinarySearchFunc(list, a, func(s span, a netip.Addr) int {
		switch {
		case s.hi.Compare(a) < 0:
			return -1
		case s.lo.Compare(a) > 0:
			return 1
		}
		return 0
	})
	return i < len(list) && list[i].lo.Compare(a) <= 0 && a.Compare(list[i].hi) <= 0
}

// Allowed reports whether addr may pass.
func (a *ACL) Allowed(addr netip.Addr) bool {
	if !addr.IsValid() {
		return len(a.allow) == 0
	}
	addr = netip.AddrFrom16(addr.As16()) // one form for IPv4 and IPv4-mapped
	if contains(a.deny, addr) {
		return false
	}
	return len(a.allow) == 0 || contains(a.allow, addr)
}
