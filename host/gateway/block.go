package gateway

import (
	"math"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/sluicehq/sluice/config"
)

func init() {
	config.RegisterRouteBlock("rate_limit", func() config.Block { return RateLimitDefaults() })
}

// RateLimitDefaults returns the defaults of a `rate_limit {}` block; the
// burst follows the rate (DecodeHCL).
func RateLimitDefaults() *RateLimit { return &RateLimit{Key: "client_ip", MaxKeys: 100000} }

// DecodeHCL decodes the rate, defaults the burst to it and checks the
// key; the tagged fields are decoded already (see config.Block).
func (r *RateLimit) DecodeHCL(b *config.Body) {
	if b.Require("rate") {
		if v, ok := b.Value("rate"); ok {
			switch v.Type() {
			case cty.Number:
				n := config.NumberText(v)
				b.Errorf(b.Range("rate"), "Invalid rate", "rate = %s has no unit; write a string like \"%s/s\", \"%s/m\" or \"%s/h\".", n, n, n, n)
			case cty.String:
				if f, err := config.ParseRate(v.AsString()); err != nil {
					b.Errorf(b.Range("rate"), "Invalid rate", "%s.", err)
				} else {
					r.Rate = f
				}
			default:
				b.TypeError("rate", `a rate string, like "100/s"`, v)
			}
		}
	}
	if !b.Has("burst") {
		r.Burst = max(1, int(math.Ceil(r.Rate)))
	}
	if b.Has("key") {
		name, isHeader := strings.CutPrefix(r.Key, "header:")
		switch {
		case r.Key == "client_ip" || r.Key == "consumer":
		case isHeader:
			if err := config.CheckHeaderName(name); err != nil {
				b.Errorf(b.Range("key"), "Invalid key", "%s.", err)
			}
		default:
			b.Errorf(b.Range("key"), "Invalid key", "key must be \"client_ip\", \"consumer\" or \"header:NAME\", not %q.%s", r.Key, config.DidYouMean(r.Key, []string{"client_ip", "consumer"}))
		}
	}
	if r.OnStoreError == "" && b.HasStore() {
		r.OnStoreError = "local"
	}
}
