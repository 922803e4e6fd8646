//go:build !wasip1

package main

import (
	"fmt"
	"testing"

	"github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
)

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
	d := fmt.Sprintf(`SecRuleEngine %s
SecRequestBodyLimitAction ProcessPartial
SecResponseBodyLimitAction ProcessPartial
SecAction "id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=%d"
SecAction "id:900001,phase:1,pass,t:none,nolog,setvar:tx.detection_paranoia_level=%d"
Include @crs-setup.conf.example
Include @owasp_crs/*.conf
`, engine, p, p)
	waf, err := coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(coreruleset.FS).WithRequestBodyAccess().WithRequestBodyLimit(128 << 10).WithDirectives(d))
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
