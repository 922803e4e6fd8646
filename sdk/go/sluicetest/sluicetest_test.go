package sluicetest_test

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	sluice "github.com/sluicehq/sluice/sdk/go"
	"github.com/sluicehq/sluice/sdk/go/sluicetest"
)

type config struct {
	Mode string `json:"mode"`
}

var cfg config

// seenInHook is what the response hook of mode "stamp" read.
var seenInHook []string

// One filter per test binary: its behaviour is picked by the config.
func init() {
	sluice.Setup(func() error {
		cfg = config{}
		if err := sluice.Config(&cfg); err != nil {
			return err
		}
		if cfg.Mode == "buffered" || cfg.Mode == "stamp-buffered" {
			sluice.EnableFeatures(sluice.BufferResponse | sluice.BufferRequest)
		}
		return nil
	})
	sluice.Handle(func(req sluice.Request, resp sluice.Response) bool {
		switch cfg.Mode {
		case "answer":
			resp.SetStatus(418)
			resp.Header().Set("X-Teapot", "yes")
			resp.Body().WriteString("short and stout")
			return false
		case "rewrite":
			v, _ := req.Query("to")
			req.SetMethod("POST")
			req.SetURI("/" + v)
			req.Header().Add("X-Via", "filter")
			req.Header().Remove("Cookie")
			req.Body().WriteString("new body")
		case "buffered":
			req.Set("path", req.Path())
			req.Set("body", string(req.Body().ReadAll()))
		case "stamp", "stamp-buffered":
			// Response fields set in the request phase, then continue.
			resp.Header().Set("X-Filter", "yes")
			resp.Header().Set("X-Both", "filter")
			resp.Header().Add("Set-Cookie", "f=1")
			resp.Header().Set("Content-Type", "text/filter")
			resp.Body().WriteString("early")
		case "log":
			sluice.LogKV(sluice.LevelInfo, "seen", "path", req.Path(), "agent", req.Header().Get("User-Agent"), "odd")
		}
		return true
	})
	sluice.HandleResponse(func(req sluice.Request, resp sluice.Response, isError bool) {
		switch cfg.Mode {
		case "buffered":
			old := string(resp.Body().ReadAll())
			resp.Header().Set("X-Path", req.Value("path").(string))
			resp.Body().WriteString(strings.ToUpper(old) + "|" + req.Value("body").(string))
			resp.SetStatus(201)
		case "stamp":
			seenInHook = resp.Header().Values("X-Both")
		case "stamp-buffered":
			resp.Body().WriteString("late") // the first write of this call replaces
		case "misuse":
			resp.Header().Set("X-Late", "1") // no BufferResponse: the host traps
		}
	})
}

func TestAnswer(t *testing.T) {
	res := sluicetest.New(t, `{"mode": "answer"}`).Do(sluicetest.NewRequest("GET", "/", ""))
	if res.Next || res.Status != 418 || res.Header.Get("X-Teapot") != "yes" || string(res.Body) != "short and stout" {
		t.Errorf("got %+v", res)
	}
}

func TestRewrite(t *testing.T) {
	f := sluicetest.New(t, `{"mode": "rewrite"}`)
	var seen *http.Request
	var body string
	f.Next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	})
	r := sluicetest.NewRequest("GET", "/old?to=new%2Dplace", "old body")
	r.Header.Set("Cookie", "c=1")
	res := f.Do(r)
	if !res.Next || seen == nil {
		t.Fatal("did not continue")
	}
	if seen.Method != "POST" || seen.URL.Path != "/new-place" || seen.Header.Get("X-Via") != "filter" || seen.Header.Get("Cookie") != "" || body != "new body" {
		t.Errorf("upstream saw %s %s %v %q", seen.Method, seen.URL, seen.Header, body)
	}
}

func TestBufferedAndState(t *testing.T) {
	f := sluicetest.New(t, `{"mode": "buffered"}`)
	var upstreamBody string
	f.Next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		upstreamBody = string(b)
		io.WriteString(w, "hello")
	})
	res := f.Do(sluicetest.NewRequest("POST", "/p?q", "payload"))
	if upstreamBody != "payload" {
		t.Errorf("upstream got body %q: BufferRequest must keep it", upstreamBody)
	}
	if res.Status != 201 || string(res.Body) != "HELLO|payload" || res.Header.Get("X-Path") != "/p" {
		t.Errorf("got %d %q %v", res.Status, res.Body, res.Header)
	}
}

func TestMisuseTraps(t *testing.T) {
	f := sluicetest.New(t, `{"mode": "misuse"}`)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "BufferResponse") {
			t.Errorf("recovered %v, want a trap about BufferResponse", r)
		}
	}()
	f.Do(sluicetest.NewRequest("GET", "/", ""))
}

func TestConfigErrors(t *testing.T) {
	if _, err := sluicetest.Load(`{"mood": "x"}`); err == nil || !strings.Contains(err.Error(), "mood") {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := sluicetest.Load(`{"mode": 1}`); err == nil {
		t.Error("wrong type loaded")
	}
}

func TestQueryValue(t *testing.T) {
	for _, tc := range []struct{ q, name, want string }{
		{"a=1&b=2", "b", "2"}, {"a=x%20y", "a", "x y"}, {"a+b=c", "a b", "c"}, {"k", "k", ""},
		{"debug=%zz", "debug", "%zz"}, {"d=%zz+a", "d", "%zz+a"}, // malformed: as sent (sdk/README.md)
	} {
		if got, ok := sluice.QueryValue(tc.q, tc.name); !ok || got != tc.want {
			t.Errorf("QueryValue(%q, %q) = %q, %v", tc.q, tc.name, got, ok)
		}
	}
	if _, ok := sluice.QueryValue("a=1", "b"); ok {
		t.Error("found a missing parameter")
	}
}

// TestRequestPhaseResponseHeaders: response fields a filter sets before
// continuing reach the client, merged with the next handler's as the
// server merges a proxied upstream's (sdk/ABI.md): the filter's first,
// Content-Type the next handler's.
func TestRequestPhaseResponseHeaders(t *testing.T) {
	f := sluicetest.New(t, `{"mode": "stamp"}`)
	f.Next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Both", "upstream")
		w.Header().Set("X-Upstream", "1")
		w.Header().Add("Set-Cookie", "u=1")
		w.Header().Set("Content-Type", "text/upstream")
		w.WriteHeader(202)
		io.WriteString(w, "from upstream")
		w.Header().Set("X-Too-Late", "1") // after the header was written: not sent
	})
	seenInHook = nil
	res := f.Do(sluicetest.NewRequest("GET", "/", ""))
	want := http.Header{
		"X-Filter":     {"yes"},
		"X-Both":       {"filter", "upstream"},
		"X-Upstream":   {"1"},
		"Set-Cookie":   {"f=1", "u=1"},
		"Content-Type": {"text/upstream"},
	}
	if !reflect.DeepEqual(res.Header, want) {
		t.Errorf("header\n got %v\nwant %v", res.Header, want)
	}
	if res.Status != 202 || string(res.Body) != "from upstream" {
		t.Errorf("got %d %q: status and body are the next handler's", res.Status, res.Body)
	}
	if !reflect.DeepEqual(seenInHook, []string{"filter", "upstream"}) {
		t.Errorf("the response hook read X-Both %q", seenInHook)
	}

	// The default next handler sends its own Content-Type.
	f.Next = nil
	res = f.Do(sluicetest.NewRequest("GET", "/", ""))
	if res.Header.Get("X-Filter") != "yes" || res.Header.Values("Content-Type")[0] != "text/plain; charset=utf-8" || len(res.Header.Values("Content-Type")) != 1 {
		t.Errorf("default next: header %v", res.Header)
	}
}

// TestResponseHookFirstWriteReplaces: the response hook's first body
// write replaces the next handler's body, whatever the request phase
// wrote.
func TestResponseHookFirstWriteReplaces(t *testing.T) {
	res := sluicetest.New(t, `{"mode": "stamp-buffered"}`).Do(sluicetest.NewRequest("GET", "/", ""))
	if string(res.Body) != "late" || res.Header.Get("X-Filter") != "yes" {
		t.Errorf("got %q %v", res.Body, res.Header)
	}
}

// TestLogKV: the structured log is the message, then logfmt fields, with
// the quoting every SDK shares (sdk/README.md).
func TestLogKV(t *testing.T) {
	f := sluicetest.New(t, `{"mode": "log"}`)
	for _, tc := range []struct{ agent, want string }{
		{"curl/8", `INFO seen path=/a agent=curl/8 odd=""`},
		{"", `INFO seen path=/a agent="" odd=""`},
		{`x "y" =z\`, `INFO seen path=/a agent="x \"y\" =z\\" odd=""`},
		{"tab\there", `INFO seen path=/a agent="tab\x09here" odd=""`},
	} {
		req := sluicetest.NewRequest("GET", "/a?q=1", "")
		req.Header.Set("User-Agent", tc.agent)
		res := f.Do(req)
		if len(res.Logs) != 1 || res.Logs[0] != tc.want {
			t.Errorf("agent %q: logs %q, want [%q]", tc.agent, res.Logs, tc.want)
		}
	}
}
