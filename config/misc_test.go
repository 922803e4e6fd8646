package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestDefault(t *testing.T) {
	dir := t.TempDir()
	for _, browse := range []bool{false, true} {
		c := Default(dir, "127.0.0.1:9999", browse)
		if c.File != "" || c.Admin != nil || len(c.Filters) != 0 {
			t.Errorf("Default has a file, admin or filters: %+v", c)
		}
		if len(c.Sites) != 1 || c.Sites[0].Routes[0].Kind != "static" {
			t.Fatalf("want one site with one static route")
		}
		st := c.Sites[0].Routes[0].Handler()
		if attr(st, "root").String() != dir || attr(st, "browse").Bool() != browse {
			t.Errorf("root %q browse %v, want %q %v", attr(st, "root"), attr(st, "browse"), dir, browse)
		}
		if l := c.Listener("127.0.0.1:9999"); l == nil || l.DefaultSite != "*" {
			t.Errorf("want listener 127.0.0.1:9999 with default site *, got %+v", l)
		}

		// Default equals the config of the equivalent file.
		src := "site \"*\" {\n  listen = [\"127.0.0.1:9999\"]\n  route \"/\" {\n    static {\n      root   = \"" + dir + "\"\n      browse = " + map[bool]string{true: "true", false: "false"}[browse] + "\n    }\n  }\n}\n"
		p, diags := Parse(filepath.Join(dir, "default.hcl"), []byte(src))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		p.File = ""
		want, _ := p.JSON()
		got, _ := c.JSON()
		if !bytes.Equal(got, want) {
			t.Errorf("Default differs from the parsed equivalent:\n%s\nwant\n%s", got, want)
		}
	}
	c := Default("", "", false)
	wd, _ := os.Getwd()
	if attr(c.Sites[0].Routes[0].Handler(), "root").String() != wd || c.Listeners[0].Address != DefaultListen {
		t.Errorf("Default(\"\", \"\") = root %q listen %q", attr(c.Sites[0].Routes[0].Handler(), "root").String(), c.Listeners[0].Address)
	}
}

func TestFormat(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.hcl")
	files = append(files, "testdata/format/ugly.hcl")
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		once, err := Format(src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		twice, err := Format(once)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) {
			t.Errorf("%s: Format is not idempotent:\n%s\nthen\n%s", f, once, twice)
		}
	}
	src, _ := os.ReadFile("testdata/format/ugly.hcl")
	got, _ := Format(src)
	golden(t, "testdata/format/ugly.golden.hcl", got)

	_, err := FormatFile("broken.hcl", []byte("site \"x\" {\n"))
	diags, ok := err.(hcl.Diagnostics)
	if !ok || !diags.HasErrors() || !strings.Contains(err.Error(), "broken.hcl:1") {
		t.Errorf("want diagnostics naming broken.hcl, got %v", err)
	}
}

func TestRedacted(t *testing.T) {
	testEnv(t)
	c, diags := Load("testdata/valid/listeners_sites.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if c.Admin.Token != "changeme" {
		t.Fatalf("token = %q", c.Admin.Token)
	}
	before, _ := c.JSON()
	r := c.Redacted()
	if r.Admin.Token != "(redacted)" {
		t.Errorf("redacted token = %q", r.Admin.Token)
	}
	after, _ := c.JSON()
	if !bytes.Equal(before, after) {
		t.Error("Redacted modified the original")
	}

	c, diags = Load("testdata/valid/sketch.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if !strings.Contains(string(c.Filter("apikey").Config), "sketch-secret-key") {
		t.Errorf("filter config lost the env value: %s", c.Filter("apikey").Config)
	}
	j, _ := c.Redacted().JSON()
	if strings.Contains(string(j), "sketch-secret-key") {
		t.Error("redacted JSON shows the secret")
	}

	c, diags = Load("testdata/valid/proxy_full.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	j, _ = c.Redacted().JSON()
	if strings.Contains(string(j), "not-a-real-token") || strings.Contains(string(j), "{client_ip}") || !strings.Contains(string(j), `"X-Real-IP": "(redacted)"`) {
		t.Errorf("want every header value redacted and the names kept:\n%s", j)
	}
}

// TestDeepCopy checks that Redacted shares nothing mutable with the
// original.
func TestDeepCopy(t *testing.T) {
	testEnv(t)
	c, diags := Load("testdata/valid/static_full.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if cp := deepCopy(reflect.ValueOf(c)).Interface().(*Config); !reflect.DeepEqual(c, cp) {
		t.Fatal("copy differs from the original")
	}
	r := c.Redacted()
	rs, cs := r.Sites[0].Routes[0].Handler(), c.Sites[0].Routes[0].Handler()
	attr(rs, "index").Index(0).SetString("changed")
	attr(rs, "headers").SetMapIndex(reflect.ValueOf("X"), reflect.ValueOf("y"))
	if attr(cs, "index").Index(0).String() == "changed" || attr(cs, "headers").MapIndex(reflect.ValueOf("X")).IsValid() {
		t.Error("Redacted shares slices or maps with the original")
	}
}

func TestJSONDeterministic(t *testing.T) {
	testEnv(t)
	c, diags := Load("testdata/valid/static_full.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	first, _ := c.JSON()
	for range 20 {
		again, _ := c.JSON()
		if !bytes.Equal(first, again) {
			t.Fatal("JSON is not deterministic")
		}
	}
}

func TestFormatDiagnostics(t *testing.T) {
	src := []byte("a = 1\n\tb  = \"héllo\"\r\nc = 3")
	rng := func(sl, sc, sb, el, ec, eb int) *hcl.Range {
		return &hcl.Range{Filename: "f.hcl", Start: hcl.Pos{Line: sl, Column: sc, Byte: sb}, End: hcl.Pos{Line: el, Column: ec, Byte: eb}}
	}
	tests := []struct {
		name string
		diag *hcl.Diagnostic
		want string
	}{
		{"tab and multibyte", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad", Detail: "Details here.", Subject: rng(2, 7, 12, 2, 14, 20)},
			"f.hcl:2:7: Bad\n  \tb  = \"héllo\"\n  \t     ^^^^^^^\n  Details here.\n"},
		{"empty range gets one caret", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Here", Subject: rng(1, 1, 0, 1, 1, 0)},
			"f.hcl:1:1: Here\n  a = 1\n  ^\n"},
		{"multi-line range stops at the line end", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Span", Subject: rng(1, 5, 4, 3, 2, 30)},
			"f.hcl:1:5: Span\n  a = 1\n      ^\n"},
		{"end of file", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "EOF", Subject: rng(3, 6, 27, 3, 6, 27)},
			"f.hcl:3:6: EOF\n  c = 3\n       ^\n"},
		{"warning", &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Careful", Subject: rng(3, 1, 22, 3, 2, 23)},
			"f.hcl:3:1: warning: Careful\n  c = 3\n  ^\n"},
		{"no subject", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Global", Detail: "Line one.\nLine two."},
			"Global\n  Line one.\n  Line two.\n"},
		{"range outside the file", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Odd", Subject: rng(9, 9, 999, 9, 9, 1000)},
			"f.hcl:9:9: Odd\n"},
		{"inverted range", &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Inv", Subject: rng(1, 3, 2, 1, 1, 0)},
			"f.hcl:1:3: Inv\n  a = 1\n    ^\n"},
	}
	files := map[string][]byte{"f.hcl": src}
	for _, tt := range tests {
		if got := FormatDiagnostics(hcl.Diagnostics{tt.diag}, files); got != tt.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.name, got, tt.want)
		}
	}
	if got := FormatDiagnostics(hcl.Diagnostics{nil, tests[0].diag}, nil); got != "f.hcl:2:7: Bad\n  Details here.\n" {
		t.Errorf("without sources: %q", got)
	}
}

// TestSecretsRedacted: /config (Redacted().JSON()) shows no secret of
// testdata/valid/secrets.hcl, while the config itself holds them all.
func TestSecretsRedacted(t *testing.T) {
	testEnv(t)
	c, diags := Load("testdata/valid/secrets.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	secrets := []string{
		"env-secret-api-key",       // env(), in traces headers and a respond body
		"env-secret-admin-token",   // env(), the admin token
		"env-secret-host.internal", // env(), in a plain string attribute
		"file-secret-token",        // file(), inside a template in header_up
		"query-secret-key",         // the traces endpoint's query
		"acme-secret-password",     // user info of a URL
		"acme-user",
		"plain-header-value", // any header_up value
		"health-secret-key",  // a health check path's query
	}
	all, _ := c.JSON()
	for _, s := range secrets {
		if !strings.Contains(string(all), s) {
			t.Errorf("the config lost %q", s)
		}
	}
	j, err := c.Redacted().JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(j), s) {
			t.Errorf("/config shows %q", s)
		}
	}
	for _, keep := range []string{
		`"endpoint": "https://collector.example.com:4318/v1/traces?redacted"`,
		`"directory": "https://redacted@acme.example.com/directory"`,
		`"Authorization": "(redacted)"`,
		`"X-Tenant": "(redacted)"`,
		`"x-api-key": "(redacted)"`,
		`"host_header": "(redacted)"`,
		`"body": "(redacted)"`,
		`"path": "/healthz?redacted"`,
	} {
		if !strings.Contains(string(j), keep) {
			t.Errorf("/config lacks %s", keep)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":                      "http://127.0.0.1:4318",
		"https://h.example/v1/traces?api_key=s3cret": "https://h.example/v1/traces?redacted",
		"https://u:p@h.example:8443/x":               "https://redacted@h.example:8443/x",
		"https://u@h.example/?k=v#frag":              "https://redacted@h.example/?redacted",
		"http://h.example/#token=s3cret":             "http://h.example/",
		"://bad@x":                                   "(redacted)",
		"not a url":                                  "not a url",
		"h2c://127.0.0.1:9000":                       "h2c://127.0.0.1:9000",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSecretsNotInDiagnostics: problems are reported without the secret
// they concern (diagnostics reach logs and the answer to POST /reload).
func TestSecretsNotInDiagnostics(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "token"), []byte("file-secret-token\n"), 0o600)
	for name, c := range map[string]struct{ proxy, secret string }{
		"header value from file() with a newline": {
			`upstreams = ["http://127.0.0.1:9000"]
			header_up {
				set = { Authorization = "Bearer ${file("token")}" }
			}`, "file-secret-token"},
		"upstream with user info": {
			`upstreams = ["http://user:url-secret-password@127.0.0.1:9000"]`, "url-secret-password"},
		"upstream with a query": {
			`upstreams = ["http://127.0.0.1:9000/?key=url-secret-key"]`, "url-secret-key"},
	} {
		t.Run(name, func(t *testing.T) {
			src := "site \"*\" {\n  route \"/\" {\n    proxy {\n" + c.proxy + "\n    }\n  }\n}\n"
			_, diags := Parse(filepath.Join(dir, "sluice.hcl"), []byte(src))
			if !diags.HasErrors() {
				t.Fatal("want an error")
			}
			if strings.Contains(diags.Error(), c.secret) {
				t.Errorf("the diagnostic shows the secret: %s", diags.Error())
			}
		})
	}
}
