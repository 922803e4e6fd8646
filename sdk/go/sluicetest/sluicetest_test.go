package sluicetest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	sluice "github.com/sluicehq/sluice/sdk/go"
	"github.com/sluicehq/sluice/sdk/go/sluicetest"
)

type config struct {
	Mode string `json:"mode"`
}

var cfg config

// One filter per test binary: its behaviour is picked by the config.
func init() {
	sluice.Setup(func() error {
		cfg = config{}
		if err := sluice.Config(&cfg); err != nil {
			return err
		}
		if cfg.Mode == "buffered" {
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
	} {
		if got, ok := sluice.QueryValue(tc.q, tc.name); !ok || got != tc.want {
			t.Errorf("QueryValue(%q, %q) = %q, %v", tc.q, tc.name, got, ok)
		}
	}
	if _, ok := sluice.QueryValue("a=1", "b"); ok {
		t.Error("found a missing parameter")
	}
}
