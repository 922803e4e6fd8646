package forwarded

import (
	"net"
	"net/netip"
	"testing"
)

func TestClient(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	proxyPeer := netip.MustParseAddr("10.0.0.1")
	cases := []struct {
		peer     netip.Addr
		xff, fwd string
		want     string
	}{
		{netip.MustParseAddr("198.51.100.9"), "1.2.3.4", "", "198.51.100.9"}, // untrusted peer: its headers are ignored
		{proxyPeer, "", "", "10.0.0.1"},
		{proxyPeer, "203.0.113.5", "", "203.0.113.5"},
		{proxyPeer, "6.6.6.6, 203.0.113.5, 10.0.0.7", "", "203.0.113.5"}, // spoofed left entry is skipped
		{proxyPeer, "10.1.1.1, 10.0.0.7", "", "10.1.1.1"},                // all trusted: the leftmost
		{proxyPeer, "[2001:db8::1]:443", "", "2001:db8::1"},
		{proxyPeer, "203.0.113.5:8080", "", "203.0.113.5"},
		{proxyPeer, "garbage, 203.0.113.5", "", "203.0.113.5"},
		{proxyPeer, "203.0.113.5, garbage", "", "10.0.0.1"},
		{proxyPeer, "", `for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711"`, "2001:db8:cafe::17"},
		{proxyPeer, "", `for=192.0.2.60, for=10.0.0.9`, "192.0.2.60"},
		{proxyPeer, "", `for=_hidden`, "10.0.0.1"},
		{proxyPeer, "fe80::1%eth0", "", "10.0.0.1"},
	}
	for _, c := range cases {
		if got := Client(c.peer, []byte(c.xff), []byte(c.fwd), trusted); got.String() != c.want {
			t.Errorf("Client(%s, %q, %q) = %s, want %s", c.peer, c.xff, c.fwd, got, c.want)
		}
	}
	xff := []byte("6.6.6.6, 203.0.113.5, 10.0.0.7")
	if n := testing.AllocsPerRun(100, func() { Client(proxyPeer, xff, nil, trusted) }); n != 0 {
		t.Errorf("Client allocates %v times", n)
	}
}

func TestPeer(t *testing.T) {
	if got := Peer(&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 1}); got.String() != "192.0.2.1" {
		t.Errorf("mapped: %s", got)
	}
	if got := Peer(nil); got.IsValid() {
		t.Errorf("nil: %s", got)
	}
}

func TestAppend(t *testing.T) {
	if got := string(AppendNode(nil, netip.MustParseAddr("2001:db8::1"))); got != `"[2001:db8::1]"` {
		t.Errorf("v6 node %s", got)
	}
	if got := string(AppendNode(nil, netip.MustParseAddr("192.0.2.1"))); got != `192.0.2.1` {
		t.Errorf("v4 node %s", got)
	}
	for in, want := range map[string]string{"example.com": "example.com", "example.com:8080": `"example.com:8080"`, `a"b`: `"a\"b"`, "": `""`} {
		if got := string(AppendValue(nil, []byte(in))); got != want {
			t.Errorf("AppendValue(%q) = %s, want %s", in, got, want)
		}
	}
}
