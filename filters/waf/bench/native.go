//go:build !wasip1

// Command native is the benchmark's peer: the same Coraza v3 and CRS as
// the waf filter, run natively as net/http middleware
// (github.com/corazawaf/coraza/v3/http) in front of one static file. Its
// directives are the filter's (see ../main.go, directives); matched
// rules are logged to stderr, one line each, as the filter logs them.
//
//	go run ./bench -addr 127.0.0.1:19101 -file page.html -paranoia 1 -mode block
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"

	"github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	txhttp "github.com/corazawaf/coraza/v3/http"
	"github.com/corazawaf/coraza/v3/types"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:19101", "listen address")
	file := flag.String("file", "page.html", "the file served for every path")
	paranoia := flag.Int("paranoia", 1, "CRS paranoia level, 1 to 4")
	mode := flag.String("mode", "block", "block or detect")
	flag.Parse()
	engine := "On"
	if *mode == "detect" {
		engine = "DetectionOnly"
	}
	logger := log.New(os.Stderr, "", log.LstdFlags)
	waf, err := newWAF(*paranoia, engine, func(r types.MatchedRule) {
		logger.Print("waf: rule " + strconv.Itoa(r.Rule().ID()) + " matched: " + r.ErrorLog())
	})
	if err != nil {
		log.Fatal(err)
	}
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, *file) })
	log.Fatal(http.ListenAndServe(*addr, txhttp.WrapHandler(waf, page)))
}

// newWAF is Coraza with the CRS at paranoia p and SecRuleEngine engine
// ("On" or "DetectionOnly"), set up as the waf filter sets it up; onMatch,
// when not nil, is called for each matched rule.
func newWAF(p int, engine string, onMatch func(types.MatchedRule)) (coraza.WAF, error) {
	d := fmt.Sprintf(`SecRuleEngine %s
SecRequestBodyLimitAction ProcessPartial
SecResponseBodyLimitAction ProcessPartial
SecAction "id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=%d"
SecAction "id:900001,phase:1,pass,t:none,nolog,setvar:tx.detection_paranoia_level=%d"
Include @crs-setup.conf.example
SecDefaultAction "phase:3,log,auditlog,pass"
SecDefaultAction "phase:4,log,auditlog,pass"
Include @owasp_crs/*.conf
`, engine, p, p)
	cfg := coraza.NewWAFConfig().
		WithRootFS(coreruleset.FS).
		WithRequestBodyAccess().WithRequestBodyLimit(128 << 10).WithRequestBodyInMemoryLimit(128 << 10).
		WithDirectives(d)
	if onMatch != nil {
		cfg = cfg.WithErrorCallback(onMatch)
	}
	return coraza.NewWAF(cfg)
}
