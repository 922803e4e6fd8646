package grafana_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/observe"
)

// series is what the dashboard may name: metric names as they appear in
// PromQL (histogram families as NAME_bucket, NAME_sum, NAME_count), each
// with its label names.
type series map[string][]string

// targetLabels are added by Prometheus when it scrapes, not by sluice.
var targetLabels = []string{"job", "instance"}

// exposed returns every series observe registers. Names and labels come
// from the registry's descriptions, so a metric that has not been
// observed yet is known too; types come from gathering after one
// observation of each kind, so that histograms get their suffixes.
func exposed(t *testing.T) series {
	m := observe.NewMetrics()
	h := (&observe.Observer{Metrics: m}).Wrap("example.com", "/", exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetStatus(200)
		x.SetBody([]byte("ok"))
		return nil
	}))
	e := exchangetest.Engines(t, h)[0]
	resp, err := e.Client.Get(e.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	m.Invocation("auth", "request", "ok", time.Microsecond)
	m.Invocation("auth", "request", "trap", time.Microsecond)
	m.Upstream("/", "http://127.0.0.1:9000").Request(200, time.Millisecond)
	m.SetCertificateExpiry("example.com", "example.com", time.Now().Add(time.Hour))
	m.Reloaded(nil)

	reg := m.Registry()
	descs := make(chan *prometheus.Desc)
	go func() { reg.Describe(descs); close(descs) }()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	vl := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	s := series{}
	for d := range descs {
		name := fq.FindStringSubmatch(d.String())
		if name == nil {
			t.Fatalf("cannot read a metric name from %s", d)
		}
		var labels []string
		if l := vl.FindStringSubmatch(d.String()); l != nil && l[1] != "" {
			labels = strings.Split(l[1], ",")
		}
		s[name[1]] = append(labels, targetLabels...)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetType().String() != "HISTOGRAM" {
			continue
		}
		labels, ok := s[f.GetName()]
		if !ok {
			t.Fatalf("gathered %s, which is not described", f.GetName())
		}
		delete(s, f.GetName())
		s[f.GetName()+"_bucket"] = append(slices.Clone(labels), "le")
		s[f.GetName()+"_sum"] = labels
		s[f.GetName()+"_count"] = labels
	}
	for _, want := range []string{"http_server_request_duration_seconds_bucket", "sluice_filter_invocations_total", "sluice_upstream_healthy", "sluice_config_reloads_total"} {
		if _, ok := s[want]; !ok {
			t.Fatalf("observe does not expose %s: the test's view of the registry is wrong", want)
		}
	}
	return s
}

// query is one PromQL expression of the dashboard and where it is.
type query struct {
	where, expr, legend string
}

// queries returns every PromQL expression of the dashboard: panel
// targets (rows included), annotations, and query variables.
func queries(t *testing.T, d map[string]any) []query {
	var qs []query
	var walk func(panels []any)
	walk = func(panels []any) {
		for _, p := range panels {
			p := p.(map[string]any)
			title, _ := p["title"].(string)
			if targets, ok := p["targets"].([]any); ok {
				for _, tg := range targets {
					tg := tg.(map[string]any)
					expr, _ := tg["expr"].(string)
					legend, _ := tg["legendFormat"].(string)
					qs = append(qs, query{fmt.Sprintf("panel %q target %v", title, tg["refId"]), expr, legend})
				}
			} else if p["type"] != "row" {
				t.Errorf("panel %q has no targets", title)
			}
			if sub, ok := p["panels"].([]any); ok {
				walk(sub)
			}
		}
	}
	walk(d["panels"].([]any))
	if a, ok := d["annotations"].(map[string]any); ok {
		for _, an := range a["list"].([]any) {
			an := an.(map[string]any)
			if expr, ok := an["expr"].(string); ok {
				qs = append(qs, query{fmt.Sprintf("annotation %q", an["name"]), expr, ""})
			}
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	for _, v := range d["templating"].(map[string]any)["list"].([]any) {
		v := v.(map[string]any)
		if v["type"] != "query" {
			continue
		}
		q, _ := v["query"].(string)
		if o, ok := v["query"].(map[string]any); ok {
			q, _ = o["query"].(string)
		}
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %q: query %q is not label_values(EXPR, LABEL)", v["name"], q)
			continue
		}
		qs = append(qs, query{fmt.Sprintf("variable %q", v["name"]), m[1], "{{" + m[2] + "}}"})
	}
	return qs
}

// functions are the PromQL functions and aggregations the dashboard may
// call; a name outside the list is most likely a typo.
var functions = []string{
	"sum", "min", "max", "avg", "count", "topk", "bottomk", "quantile",
	"rate", "irate", "increase", "delta", "changes", "resets",
	"histogram_quantile", "time", "vector", "scalar", "abs", "clamp_min", "clamp_max",
	"max_over_time", "min_over_time", "avg_over_time", "last_over_time",
}

var (
	stringLit  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	rangeSel   = regexp.MustCompile(`\[[^\]]*\]`)
	matchers   = regexp.MustCompile(`\{([^}]*)\}`)
	grouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	ident      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	identCall  = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?`)
	legendVars = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	keywords   = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)

// parse splits a PromQL expression into the metric names, label names
// and functions it mentions. It is not a PromQL parser; it is enough for
// the expressions a dashboard holds: selectors, aggregations with by,
// function calls, arithmetic.
func parse(expr string) (metrics, labels, funcs []string) {
	e := stringLit.ReplaceAllString(expr, `""`) // label values, regexes
	e = rangeSel.ReplaceAllString(e, "")        // [5m], [$__rate_interval]
	for _, m := range matchers.FindAllStringSubmatch(e, -1) {
		labels = append(labels, ident.FindAllString(m[1], -1)...)
	}
	e = matchers.ReplaceAllString(e, " ")
	for _, m := range grouping.FindAllStringSubmatch(e, -1) {
		labels = append(labels, ident.FindAllString(m[1], -1)...)
	}
	e = grouping.ReplaceAllString(e, " ")
	for _, m := range identCall.FindAllStringSubmatchIndex(e, -1) {
		name := e[m[2]:m[3]]
		if m[2] > 0 && (e[m[2]-1] >= '0' && e[m[2]-1] <= '9' || e[m[2]-1] == '.') {
			continue // the exponent or suffix of a number
		}
		switch {
		case m[4] >= 0:
			funcs = append(funcs, name)
		case slices.Contains(keywords, name):
		default:
			metrics = append(metrics, name)
		}
	}
	return metrics, labels, funcs
}

func TestParse(t *testing.T) {
	m, l, f := parse(`histogram_quantile(0.99, sum by (le, x) (rate(a_bucket{y=~"$s", z!="q{1}"}[$__rate_interval]))) / ignoring(w) b + 1e3`)
	if fmt.Sprint(m, l, f) != "[a_bucket b] [y z le x w] [histogram_quantile sum rate]" {
		t.Errorf("parse: %v %v %v", m, l, f)
	}
}

// TestDashboard checks that sluice-dashboard.json is a Grafana dashboard
// whose every query names only metrics and labels sluice exposes.
func TestDashboard(t *testing.T) {
	src, err := os.ReadFile("sluice-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(src, &d); err != nil {
		t.Fatalf("sluice-dashboard.json: %v", err)
	}
	for _, k := range []string{"title", "uid", "panels", "templating", "schemaVersion"} {
		if _, ok := d[k]; !ok {
			t.Errorf("no %q: not a Grafana dashboard", k)
		}
	}
	ids := map[float64]bool{}
	var walkIDs func([]any)
	walkIDs = func(ps []any) {
		for _, p := range ps {
			p := p.(map[string]any)
			id, _ := p["id"].(float64)
			if ids[id] {
				t.Errorf("panel %q: id %v used twice", p["title"], id)
			}
			ids[id] = true
			if sub, ok := p["panels"].([]any); ok {
				walkIDs(sub)
			}
		}
	}
	walkIDs(d["panels"].([]any))

	known := exposed(t)
	used := map[string]bool{}
	qs := queries(t, d)
	if len(qs) < 20 {
		t.Fatalf("found %d queries, want the dashboard's", len(qs))
	}
	for _, q := range qs {
		if strings.TrimSpace(q.expr) == "" {
			t.Errorf("%s: empty query", q.where)
			continue
		}
		if strings.Count(q.expr, "(") != strings.Count(q.expr, ")") || strings.Count(q.expr, "{") != strings.Count(q.expr, "}") {
			t.Errorf("%s: unbalanced brackets in %s", q.where, q.expr)
		}
		metrics, labels, funcs := parse(q.expr)
		var allowed []string
		for _, m := range metrics {
			ls, ok := known[m]
			if !ok {
				t.Errorf("%s: metric %s is not exposed by sluice (host/observe)", q.where, m)
			}
			used[m] = true
			allowed = append(allowed, ls...)
		}
		for _, l := range labels {
			if !slices.Contains(allowed, l) {
				t.Errorf("%s: label %s is not on %v", q.where, l, metrics)
			}
		}
		for _, f := range funcs {
			if !slices.Contains(functions, f) {
				t.Errorf("%s: unknown function %s()", q.where, f)
			}
		}
		for _, m := range legendVars.FindAllStringSubmatch(q.legend, -1) {
			if !slices.Contains(allowed, m[1]) {
				t.Errorf("%s: legend {{%s}} is not a label of %v", q.where, m[1], metrics)
			}
		}
	}

	// The metrics a sluice dashboard must show.
	for _, m := range []string{
		"http_server_request_duration_seconds_count", "http_server_request_duration_seconds_bucket",
		"sluice_filter_invocations_total", "sluice_filter_errors_total", "sluice_filter_duration_seconds_bucket",
		"sluice_upstream_healthy", "sluice_upstream_requests_total", "sluice_config_reloads_total",
	} {
		if !used[m] {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
	var unused []string
	for m := range known {
		if strings.HasPrefix(m, "sluice_") && !used[m] && !strings.HasSuffix(m, "_sum") && !strings.HasSuffix(m, "_count") && !used[strings.TrimSuffix(m, "_bucket")+"_count"] {
			unused = append(unused, m)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Logf("sluice metrics not on the dashboard: %v", unused)
	}
}
