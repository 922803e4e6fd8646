package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk/go/sluicetest"
)

func TestBadConfig(t *testing.T) {
	for _, c := range []string{
		`{"mode": "drop"}`,
		`{"paranoia": 5}`,
		`{"paranoia": -1}`,
		`{"request_body_limit": -1}`,
		`{"response_body_limit": 2000000000}`,
		`{"directives": ["SecRule ARGS \"@rx x\" \"id:1,phase:1,deny\" extra"]}`,
		`{"paranoya": 2}`,
		`{"request_body_limit_action": "drop"}`,
		`{"inspect_limit": -1}`,
	} {
		if _, err := sluicetest.Load(c); err == nil {
			t.Errorf("%s: loaded", c)
		}
	}
}

// TestDirectivesAndBodies: the operator's directives run after the CRS;
// the request body is inspected up to request_body_limit and reaches the
// upstream whole; a response body is inspected when response_body_limit
// is set, and a match there replaces the response with 403.
func TestDirectivesAndBodies(t *testing.T) {
	f := sluicetest.New(t, `{
		"crs": false,
		"setup": ["SecRule REQUEST_HEADERS:X-Skip \"@streq 1\" \"id:1000,phase:2,pass,nolog,ctl:ruleRemoveById=1001\""],
		"request_body_limit": 8,
		"request_body_limit_action": "process_partial",
		"response_body_limit": 1024,
		"directives": [
			"SecRule REQUEST_BODY \"@contains evil\" \"id:1001,phase:2,deny,status:403,log\"",
			"SecRule RESPONSE_BODY \"@contains secret\" \"id:1002,phase:4,deny,status:403,log\""
		]
	}`)
	for _, c := range []struct {
		body, upstream string
		status         int
	}{
		{"evil=1", "ok", 403},
		{"evil=1&skip", "ok", 200},  // setup's rule runs first and removes 1001
		{"12345678evil", "ok", 200}, // past the limit: not inspected
		{"fine", "a secret", 403},
		{"fine", "ok", 200},
	} {
		var got string
		f.Next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got = string(b)
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, c.upstream)
		})
		r := sluicetest.NewRequest("POST", "/", c.body)
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if strings.HasSuffix(c.body, "&skip") {
			r.Header.Set("X-Skip", "1")
		}
		res := f.Do(r)
		if res.Status != c.status {
			t.Errorf("body %q, upstream %q: status %d, want %d", c.body, c.upstream, res.Status, c.status)
			continue
		}
		if c.status == 200 && (got != c.body || string(res.Body) != c.upstream) {
			t.Errorf("body %q: upstream got %q and answered %q, want it whole", c.body, got, res.Body)
		}
	}
}

// TestJSONBody: a JSON body is parsed (its values are ARGS the CRS
// inspects), and one that does not parse is refused with 400.
func TestJSONBody(t *testing.T) {
	f := sluicetest.New(t, `{}`)
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"q": "hello"}`, 200},
		{`{"q": "<script>alert(1)</script>"}`, 403},
		{`{"q": `, 400},
	} {
		r := sluicetest.NewRequest("POST", "/api", c.body)
		r.Host = "shop.example"
		r.Header.Set("Content-Type", "application/json")
		res := f.Do(r)
		if res.Status != c.status {
			t.Errorf("%s: status %d, want %d", c.body, res.Status, c.status)
		}
	}
}

func TestCRSBlocksAndLogs(t *testing.T) {
	f := sluicetest.New(t, `{}`)
	r := sluicetest.NewRequest("GET", "/?q="+url.QueryEscape("<script>alert(1)</script>"), "")
	r.Host = "shop.example"
	res := f.Do(r)
	if res.Next || res.Status != 403 {
		t.Fatalf("xss: next=%v status=%d, want 403", res.Next, res.Status)
	}
	var ids []string
	for _, l := range res.Logs {
		if i := strings.Index(l, "waf: rule "); i >= 0 {
			ids = append(ids, strings.Fields(l[i:])[2])
		}
	}
	for _, want := range []string{"941100", "949110", "980170"} { // 980170: the score report
		if !strings.Contains(strings.Join(ids, ","), want) {
			t.Errorf("logged rules %v, want %s among them", ids, want)
		}
	}
	r = sluicetest.NewRequest("GET", "/products?id=42", "")
	r.Host = "shop.example"
	if res := f.Do(r); !res.Next {
		t.Errorf("clean request: status %d", res.Status)
	}
}

// TestResponseRulesLogged: with response_body_limit set, a response that
// leaks an error message matches the CRS's response rules, and their
// matches are logged like the request's.
func TestResponseRulesLogged(t *testing.T) {
	f := sluicetest.New(t, `{"mode": "detect", "paranoia": 2, "response_body_limit": 4096}`)
	f.Next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "Invalid date selected")
	})
	r := sluicetest.NewRequest("GET", "/calendar", "")
	r.Host = "shop.example"
	res := f.Do(r)
	if !res.Next || res.Status != 200 {
		t.Fatalf("detect mode: next=%v status=%d", res.Next, res.Status)
	}
	logged := strings.Join(res.Logs, "\n")
	if !strings.Contains(logged, "waf: rule 953101 matched") {
		t.Errorf("953101 not logged:\n%s", logged)
	}
}

// padded is the padding attack of issue 21 (finding 5) in each body
// format the waf parses: an attack placed past request_body_limit, where
// ProcessPartial left it uninspected.
func padded(pad int) []struct{ name, ct, body string } {
	xss := "<script>alert(1)</script>"
	p := strings.Repeat("x", pad)
	return []struct{ name, ct, body string }{
		{"urlencoded", "application/x-www-form-urlencoded", "a=" + p + "&q=" + url.QueryEscape(xss)},
		{"multipart", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n" + p +
			"\r\n--B\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n" + xss + "\r\n--B--\r\n"},
		{"json", "application/json", `{"a": "` + p + `", "q": "` + xss + `"}`},
		{"xml", "application/xml", "<r><a>" + p + "</a><q>" + xss + "</q></r>"},
	}
}

// TestBodyOverLimitRefused: a request body over request_body_limit is
// refused with 413 in block mode, whatever its format, before anything
// reaches the next handler; with request_body_limit_action =
// "process_partial" its first bytes are inspected and the rest passes
// (the operator's choice); a body of exactly the limit is inspected and
// passes. Issue 21, finding 5: it got 200 and the upstream all of it.
func TestBodyOverLimitRefused(t *testing.T) {
	const limit = 1024
	for _, c := range []struct {
		config string
		pad    int
		status int
	}{
		{`{"request_body_limit": 1024, "inspect_limit": 0}`, 2000, 413},
		{`{"request_body_limit": 1024, "inspect_limit": 0, "request_body_limit_action": "reject"}`, 2000, 413},
		{`{"request_body_limit": 1024, "inspect_limit": 0, "request_body_limit_action": "process_partial"}`, 2000, 200},
		{`{"request_body_limit": 1024, "inspect_limit": 0, "mode": "detect"}`, 2000, 200},
	} {
		f := sluicetest.New(t, c.config)
		for _, b := range padded(c.pad) {
			reached := false
			f.Next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = true
				io.WriteString(w, "ok")
			})
			r := sluicetest.NewRequest("POST", "/form", b.body)
			r.Host = "shop.example"
			r.Header.Set("User-Agent", "Mozilla/5.0")
			r.Header.Set("Content-Type", b.ct)
			res := f.Do(r)
			if c.status == 200 && (b.name == "json" || b.name == "xml") && res.Status == 400 {
				continue // cut at the limit, it does not parse: refused for that (README)
			}
			if res.Status != c.status || reached != (c.status == 200) {
				t.Errorf("%s, %s (%d bytes): status %d, next handler reached %v; want %d", c.config, b.name, len(b.body), res.Status, reached, c.status)
			}
		}
	}
	// Exactly at the limit: inspected whole, and passes when clean.
	f := sluicetest.New(t, `{"request_body_limit": 1024, "inspect_limit": 0}`)
	r := sluicetest.NewRequest("POST", "/form", "a="+strings.Repeat("x", limit-2))
	r.Host = "shop.example"
	r.Header.Set("User-Agent", "Mozilla/5.0")
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res := f.Do(r); res.Status != 200 {
		t.Errorf("a body of exactly request_body_limit: %d, want 200", res.Status)
	}
}

// TestInspectLimit: arguments or a body over inspect_limit are refused
// with 413 before the CRS runs, in block mode, for each body format and
// for the query; under it the request is inspected as usual (an attack
// gets 403); in detect mode the request passes and the bound's rule is
// logged. The CRS costs the guest about 0.1 ms per byte inspected, so
// the bound is what keeps one request from costing seconds.
func TestInspectLimit(t *testing.T) {
	// The guest keeps its config in globals: one filter at a time.
	do := func(f *sluicetest.Filter, target, ct, body string) *sluicetest.Result {
		method := "GET"
		if body != "" {
			method = "POST"
		}
		r := sluicetest.NewRequest(method, target, body)
		r.Host = "shop.example"
		r.Header.Set("User-Agent", "Mozilla/5.0")
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		return f.Do(r)
	}
	block := sluicetest.New(t, `{"inspect_limit": 4096}`)
	for _, b := range padded(5000) {
		if res := do(block, "/form", b.ct, b.body); res.Status != 413 {
			t.Errorf("%s over inspect_limit: %d, want 413", b.name, res.Status)
		}
	}
	for _, b := range padded(1000) {
		if res := do(block, "/form", b.ct, b.body); res.Status != 403 {
			t.Errorf("%s under inspect_limit: %d, want 403 (the attack inspected)", b.name, res.Status)
		}
	}
	if res := do(block, "/?a="+strings.Repeat("x", 5000), "", ""); res.Status != 413 {
		t.Errorf("query over inspect_limit: %d, want 413", res.Status)
	}
	detect := sluicetest.New(t, `{"inspect_limit": 4096, "mode": "detect"}`)
	for _, b := range padded(5000) {
		res := do(detect, "/form", b.ct, b.body)
		if !res.Next || !strings.Contains(strings.Join(res.Logs, "\n"), "inspect_limit") {
			t.Errorf("%s over inspect_limit in detect mode: next %v, logs %q; want it passed and logged", b.name, res.Next, res.Logs)
		}
	}
}
