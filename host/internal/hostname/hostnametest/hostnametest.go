// Package hostnametest is one table of sites and the names that select
// them, which host/internal/hostname's own tests, route's (Table.Site,
// by Host) and tlsconf's (Table.Lookup, by TLS server name) all run, so
// that SNI and Host are held to the same rule.
package hostnametest

// Default is the name of the table's default site: the one a name that
// selects no site gets.
const Default = "fallback.test"

// Sites are the table's sites: a name (which selects the site, as a
// site's name does in config) and its aliases.
var Sites = []struct {
	Name    string
	Aliases []string
}{
	{"a.test", []string{"WWW.a.test."}},
	{"*.w.test", nil},
	{"*.v.w.test", nil},
	{"[::1]", nil},
	{"127.0.0.1", nil},
	{Default, []string{"_", "*"}}, // no name selects these
}

// Names are names as a client sends them (a Host header or :authority
// with or without a port, or a TLS server name) and the site each selects.
var Names = []struct{ Name, Site string }{
	{"a.test", "a.test"},
	{"A.TEST", "a.test"},
	{"a.test.", "a.test"},
	{"a.test:8443", "a.test"},
	{"A.Test.:443", "a.test"},
	{"www.a.test", "a.test"},
	{"a.test:", "a.test"},        // an empty port
	{"a.test:x", Default},        // not a port: part of the name
	{"a.test..", Default},        // one trailing dot is dropped, not two
	{"x.w.test", "*.w.test"},     // one label before the wildcard's suffix
	{"y.x.W.test:1", "*.w.test"}, // or more
	{"w.test", Default},          // the suffix alone
	{".w.test", Default},         // an empty label: the suffix still
	{"x.v.w.test", "*.v.w.test"}, // the longest suffix first
	{"[::1]:443", "[::1]"},       // brackets kept, port dropped
	{"[::1]", "[::1]"},
	{"::1", Default},
	{"127.0.0.1:80", "127.0.0.1"},
	{"_", Default},
	{"*", Default},
	{"", Default},
	{"b.test", Default},
}
