//go:build !wasip1

package main

import "testing"

// BenchmarkNative runs the request of make bench-waf (a GET of a page,
// with the headers wrk sends there) through Coraza and the CRS natively,
// one transaction at a time, without HTTP: the peer of host's
// BenchmarkWAF, and what to profile for the rule set's mix of work
// (go test -bench Native -cpuprofile).
func BenchmarkNative(b *testing.B) {
	b.Run("p1-block", func(b *testing.B) { benchNative(b, 1, "On") })
	b.Run("p4-detect", func(b *testing.B) { benchNative(b, 4, "DetectionOnly") })
}

func benchNative(b *testing.B, p int, engine string) {
	waf, err := newWAF(p, engine, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx := waf.NewTransaction()
		tx.ProcessConnection("127.0.0.1", 40000, "", 0)
		tx.ProcessURI("/page.html", "GET", "HTTP/1.1")
		tx.AddRequestHeader("Host", "bench.example")
		tx.AddRequestHeader("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) wrk")
		tx.AddRequestHeader("Accept", "text/html")
		tx.AddRequestHeader("Accept-Language", "en")
		tx.SetServerName("bench.example")
		if it := tx.ProcessRequestHeaders(); it != nil {
			b.Fatal(it.RuleID)
		}
		if it, _ := tx.ProcessRequestBody(); it != nil {
			b.Fatal(it.RuleID)
		}
		tx.ProcessLogging()
		tx.Close()
	}
}
