package gateway

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/host/exchange"
)

// The decisions a limit makes, the values of the decision label of
// sluice_rate_limit_decisions_total.
const (
	DecisionAdmit           = "admit"             // under the limit
	DecisionRefuse          = "refuse"            // over it: 429
	DecisionLocalAdmit      = "local_admit"       // the store failed; admitted by this instance's buckets
	DecisionLocalRefuse     = "local_refuse"      // the store failed; refused (429) by them
	DecisionStoreErrorAdmit = "store_error_admit" // the store failed; on_store_error "allow"
	DecisionStoreErrorDeny  = "store_error_deny"  // the store failed; on_store_error "deny": 503
)

// Decisions lists the decisions, in a fixed order.
var Decisions = []string{DecisionAdmit, DecisionRefuse, DecisionLocalAdmit, DecisionLocalRefuse, DecisionStoreErrorAdmit, DecisionStoreErrorDeny}

// decisionCounts counts one limit's decisions, by the index in
// Decisions.
type decisionCounts [6]atomic.Uint64

// counts holds every limit's counts by name, for the life of the
// process: a reload that keeps a route keeps counting where it was (the
// set is bounded by the routes of the configs loaded).
var counts sync.Map // name → *decisionCounts

func countsFor(name string) *decisionCounts {
	c, _ := counts.LoadOrStore(name, new(decisionCounts))
	return c.(*decisionCounts)
}

// EachDecisionCount calls f with every limit's name (SITE/ROUTE), each
// decision and its count since the process started.
func EachDecisionCount(f func(route, decision string, n uint64)) {
	counts.Range(func(k, v any) bool {
		c := v.(*decisionCounts)
		for i, d := range Decisions {
			f(k.(string), d, c[i].Load())
		}
		return true
	})
}

// count adds d to the limit's counts.
func (l *Limiter) count(d Decision) {
	if l.counts == nil {
		return
	}
	i := 0
	switch {
	case !d.StoreFailed && d.Verdict == Admit:
		i = 0
	case !d.StoreFailed:
		i = 1
	case l.local != nil && d.Verdict == Admit:
		i = 2
	case l.local != nil:
		i = 3
	case d.Verdict == Admit:
		i = 4
	default:
		i = 5
	}
	l.counts[i].Add(1)
}

// setHeaders tells the client its limit (draft-ietf-httpapi-ratelimit-
// headers): RateLimit-Policy `"default";q=BURST;w=SECONDS` (the bucket,
// and how long it takes to fill), and RateLimit `"default";r=LEFT;t=
// SECONDS` (tokens left, seconds until the bucket is full again) where
// this instance knows them: always for a local limit, on a refusal only
// for a shared one (the store's count is not known between round
// trips). A refusal also carries Retry-After.
func (l *Limiter) setHeaders(x exchange.Exchange, d Decision) {
	x.SetResponseHeader("RateLimit-Policy", l.policy)
	left := d.Remaining
	switch d.Verdict {
	case Over:
		left = 0
		x.SetResponseHeader("Retry-After", retryAfter(d.Wait))
	case Unavailable:
		x.SetResponseHeader("Retry-After", retryAfter(d.Wait))
		return
	}
	if left < 0 {
		return
	}
	// Seconds until full: the tokens missing at the refill rate; on a
	// refusal at least the wait for the next one.
	full := int64(math.Ceil((l.burst - float64(left)) / (l.rate * 1e9)))
	if w := int64((d.Wait + 999999999) / 1e9); d.Verdict == Over && w > full {
		full = w
	}
	x.SetResponseHeader("RateLimit", `"default";r=`+strconv.Itoa(left)+`;t=`+strconv.FormatInt(max(full, 0), 10))
}
