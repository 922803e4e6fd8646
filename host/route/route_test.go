package route

import (
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/internal/hostname/hostnametest"
)

func TestMatch(t *testing.T) {
	mk := func(prefixes ...string) []*Route {
		var rs []*Route
		for _, p := range prefixes {
			rs = append(rs, &Route{Prefix: p})
		}
		return rs
	}
	a := &Site{Name: "a", Hosts: []string{"example.com", "WWW.example.com"}, Routes: mk("/", "/api/", "/api/v2/", "/static")}
	b := &Site{Name: "b", Hosts: []string{"*.b.test"}, Routes: mk("/")}
	d := &Site{Name: "d", Hosts: []string{"_"}, Default: true, Routes: mk("/only/")}
	tab, err := NewTable([]*Site{a, b, d})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host, path string
		site       string
		route      string // "" for no route
	}{
		{"example.com", "/", "a", "/"},
		{"Example.COM:8080", "/x", "a", "/"},
		{"www.example.com.", "/api/x", "a", "/api/"},
		{"example.com", "/api", "a", "/api/"},
		{"example.com", "/api/v2/users", "a", "/api/v2/"},
		{"example.com", "/api/v2", "a", "/api/v2/"},
		{"example.com", "/apiary", "a", "/"},
		{"example.com", "/static/app.js", "a", "/static"},
		{"example.com", "/staticfile", "a", "/"},
		{"example.com", "/static", "a", "/static"},
		{"example.com", "/api/../secret", "a", "/"},
		{"example.com", "/api/%2e%2e/secret", "a", "/"},
		{"example.com", "//api/x", "a", "/api/"},
		{"example.com", "/x/..%2fapi/v2/", "a", "/api/v2/"},
		{"x.b.test", "/", "b", "/"},
		{"y.x.b.test:1", "/", "b", "/"},
		{"b.test", "/", "d", ""},
		{"unknown", "/only/here", "d", "/only/"},
		{"", "/only/", "d", "/only/"},
		{"[::1]:8080", "/only/", "d", "/only/"},
	}
	for _, c := range cases {
		s := tab.Site([]byte(c.host))
		if s.Name != c.site {
			t.Errorf("%s%s: site %q, want %q", c.host, c.path, s.Name, c.site)
			continue
		}
		r := s.Route([]byte(c.path))
		got := ""
		if r != nil {
			got = r.Prefix
		}
		if got != c.route {
			t.Errorf("%s%s: route %q, want %q", c.host, c.path, got, c.route)
		}
	}
}

func TestNewTableErrors(t *testing.T) {
	if _, err := NewTable([]*Site{{Name: "a", Hosts: []string{"x"}}, {Name: "b", Hosts: []string{"X"}}}); err == nil {
		t.Error("duplicate host: no error")
	}
	if _, err := NewTable([]*Site{{Name: "a", Default: true}, {Name: "b", Default: true}}); err == nil {
		t.Error("two defaults: no error")
	}
}

func BenchmarkMatch(b *testing.B) {
	var h exchange.HandlerFunc
	s := &Site{Name: "a", Hosts: []string{"localhost", "example.com"}, Routes: []*Route{{Prefix: "/", Handler: h}, {Prefix: "/api/", Handler: h}}}
	tab, _ := NewTable([]*Site{s})
	host, p := []byte("Example.com:8080"), []byte("/assets/app.js")
	b.ReportAllocs()
	for b.Loop() {
		if tab.Site(host).Route(p) == nil {
			b.Fatal("no route")
		}
	}
}

// TestSiteNames runs hostname's shared table through Table.Site: the
// names tlsconf.Table.Lookup is held to as well (TestLookupNames).
func TestSiteNames(t *testing.T) {
	var sites []*Site
	for _, s := range hostnametest.Sites {
		sites = append(sites, &Site{Name: s.Name, Hosts: append([]string{s.Name}, s.Aliases...),
			Default: s.Name == hostnametest.Default})
	}
	tab, err := NewTable(sites)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range hostnametest.Names {
		if got := tab.Site([]byte(c.Name)).Name; got != c.Site {
			t.Errorf("Site(%q) = %q, want %q", c.Name, got, c.Site)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, c := range hostnametest.Names {
			tab.Site([]byte(c.Name))
		}
	}); n != 0 {
		t.Errorf("Site allocates %v times", n)
	}
}
