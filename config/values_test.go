package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string // substring of the error; "" for none
	}{
		{"100B", 100, ""},
		{"0B", 0, ""},
		{"1KB", 1000, ""},
		{"1KiB", 1024, ""},
		{"16KiB", 16 << 10, ""},
		{"16MiB", 16 << 20, ""},
		{"10MB", 10_000_000, ""},
		{"1GiB", 1 << 30, ""},
		{"2GB", 2_000_000_000, ""},
		{"1TiB", 1 << 40, ""},
		{"1.5KiB", 1536, ""},
		{"0.1B", 1, ""}, // rounded up
		{" 16 MiB ", 16 << 20, ""},
		{"512", 0, "has no unit"},
		{"0", 0, "has no unit"},
		{"", 0, "not a size"},
		{"MiB", 0, "not a size"},
		{"-1KiB", 0, "negative"},
		{"16mb", 0, `did you mean "16MB"`},
		{"16Mb", 0, "unknown size unit"},
		{"16 bytes", 0, "unknown size unit"},
		{"1.2.3KiB", 0, "not a size"},
		{"99999999TiB", 0, "too large"},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseSize(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseSize(%q) error = %v, want one containing %q", tt.in, err, tt.err)
		case tt.err == "" && got != tt.want:
			t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"5s", 5 * time.Second, ""},
		{"100ms", 100 * time.Millisecond, ""},
		{"1h", time.Hour, ""},
		{"1m30s", 90 * time.Second, ""},
		{"0s", 0, ""},
		{"250us", 250 * time.Microsecond, ""},
		{"1.5s", 1500 * time.Millisecond, ""},
		{"30", 0, "has no unit"},
		{"0", 0, "has no unit"},
		{"", 0, "empty duration"},
		{"-5s", 0, "negative"},
		{"5 seconds", 0, "not a duration"},
		{"5d", 0, "not a duration"},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseDuration(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseDuration(%q) error = %v, want one containing %q", tt.in, err, tt.err)
		case tt.err == "" && got != tt.want:
			t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		err  string
	}{
		{"100/s", 100, ""},
		{"6000/m", 100, ""},
		{"36/h", 0.01, ""},
		{"0.5/s", 0.5, ""},
		{" 10 / s ", 10, ""},
		{"100", 0, "not a rate"},
		{"100/sec", 0, "unknown rate unit"},
		{"0/s", 0, "above zero"},
		{"-1/s", 0, "above zero"},
		{"x/s", 0, "not a rate"},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseRate(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseRate(%q) error = %v, want one containing %q", tt.in, err, tt.err)
		case tt.err == "" && (got < tt.want*0.999999 || got > tt.want*1.000001):
			t.Errorf("ParseRate(%q) = %g, want %g", tt.in, got, tt.want)
		}
	}
}

func TestCheckListenAddr(t *testing.T) {
	tests := []struct {
		in  string
		err string
	}{
		{":8080", ""},
		{"127.0.0.1:8080", ""},
		{"[::1]:443", ""},
		{"[::]:80", ""},
		{"localhost:65535", ""},
		{"example.com:1", ""},
		{"8080", "has no port"},
		{"localhost", "has no port"},
		{":0", "out of range"},
		{":65536", "out of range"},
		{":http", "not a number"},
		{":-1", "not a number"},
		{"bad_host!:80", "neither an IP address nor a host name"},
		{"[example.com]:80", "not an IP address"},
		{"::1:80", "not a listen address"},
	}
	for _, tt := range tests {
		err := checkListenAddr(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("checkListenAddr(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("checkListenAddr(%q) = %v, want an error containing %q", tt.in, err, tt.err)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"apikey", "auth", "cors", "round_robin", "least_conn"}
	tests := map[string]string{
		"api_key":           "apikey",
		"auht":              "auth", // transposition
		"Auth":              "auth",
		"least_connections": "",
		"least_con":         "least_conn",
		"xyz":               "",
		"roundrobin":        "round_robin",
	}
	for in, want := range tests {
		if got := suggest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFunctions checks env() and file() through a whole config.
func TestFunctions(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "body.txt"), []byte("from a file"), 0o644)
	t.Setenv("SLUICE_FN_SET", "from env")
	t.Setenv("SLUICE_FN_EMPTY", "")
	t.Setenv("SLUICE_FN_UNSET", "")
	os.Unsetenv("SLUICE_FN_UNSET")

	tests := []struct {
		expr string
		want string
		err  string
	}{
		{`env("SLUICE_FN_SET")`, "from env", ""},
		{`env("SLUICE_FN_SET", "default")`, "from env", ""},
		{`env("SLUICE_FN_UNSET", "default")`, "default", ""},
		{`env("SLUICE_FN_EMPTY", "default")`, "", ""},
		{`"${env("SLUICE_FN_SET")}!"`, "from env!", ""},
		{`env("SLUICE_FN_UNSET")`, "", `environment variable "SLUICE_FN_UNSET" is not set`},
		{`env("A", "b", "c")`, "", "at most one default"},
		{`env()`, "", "Not enough function arguments"},
		{`file("body.txt")`, "from a file", ""},
		{`file("` + filepath.Join(dir, "body.txt") + `")`, "from a file", ""},
		{`file("nope.txt")`, "", `cannot read "nope.txt": no such file or directory`},
		{`file(".")`, "", `cannot read "."`},
		{`nosuch("x")`, "", "Call to unknown function"},
	}
	for _, tt := range tests {
		src := "site \"*\" {\n  route \"/\" {\n    respond {\n      body = " + tt.expr + "\n    }\n  }\n}\n"
		c, diags := Parse(filepath.Join(dir, "fn.hcl"), []byte(src))
		if tt.err != "" {
			out := FormatDiagnostics(diags, nil)
			if c != nil || !strings.Contains(out, tt.err) {
				t.Errorf("%s: got %q, want an error containing %q", tt.expr, out, tt.err)
			}
			continue
		}
		if diags.HasErrors() {
			t.Errorf("%s: %v", tt.expr, diags)
			continue
		}
		if got := attr(c.Sites[0].Routes[0].Handler(), "body").String(); got != tt.want {
			t.Errorf("%s = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// TestEnvUnsetRange checks that an unset variable is reported at the
// argument, so the caret points at the name.
func TestEnvUnsetRange(t *testing.T) {
	t.Setenv("SLUICE_FN_UNSET", "")
	os.Unsetenv("SLUICE_FN_UNSET")
	src := []byte("admin {\n  token = env(\"SLUICE_FN_UNSET\")\n}\nsite \"*\" {\n  route \"/\" {\n    respond {}\n  }\n}\n")
	_, diags := Parse("x.hcl", src)
	if len(diags) != 1 || diags[0].Subject == nil {
		t.Fatalf("want a diagnostic with a range, got %v", diags)
	}
	if r := diags[0].Subject; r.Start.Line != 2 || r.Start.Column != 16 {
		t.Errorf("want it at 2:16 (the name inside the quotes), got %d:%d", r.Start.Line, r.Start.Column)
	}
}

func TestMemoryRoundedToPages(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	for in, want := range map[string]int64{"64KiB": 65536, "65537B": 131072, "100KiB": 131072, "1MB": 1048576, "16MiB": 16 << 20} {
		src := `filter "f" {
  module = "f.wasm"
  memory = "` + in + `"
}
site "*" {
  route "/" {
    filters = ["f"]
    respond {}
  }
}
`
		c, diags := Parse(filepath.Join(dir, "m.hcl"), []byte(src))
		if diags.HasErrors() {
			t.Fatalf("%s: %v", in, diags)
		}
		if got := c.Filter("f").Memory; got != want {
			t.Errorf("memory %q = %d, want %d", in, got, want)
		}
	}
}
