package hostname_test

import (
	"testing"

	"github.com/sluicehq/sluice/host/internal/hostname"
)

// BenchmarkLookup is the site lookup of every request (route.Table.Site)
// and every handshake (tlsconf.Table.Lookup).
func BenchmarkLookup(b *testing.B) {
	type site struct{ name string }
	tab := hostname.New[*site]()
	tab.Add("example.com", &site{"example.com"})
	tab.Add("*.w.example.com", &site{"w"})
	for _, h := range []string{"example.com", "Example.COM:8080", "x.w.example.com", "nope.test"} {
		b.Run(h, func(b *testing.B) {
			host := []byte(h)
			for b.Loop() {
				tab.Lookup(host)
			}
		})
	}
}
