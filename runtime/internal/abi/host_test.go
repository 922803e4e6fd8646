package abi

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/runtime/internal/fakehttp"
)

func TestValidation(t *testing.T) {
	tokens := map[string]bool{"GET": true, "x-sluice": true, "X_Y.z~": true, "": true, "a b": false, "a:b": false, "é": false, "a\x00": false}
	for s, want := range tokens {
		if got := isToken([]byte(s)); got != want {
			t.Errorf("isToken(%q) = %v", s, got)
		}
	}
	values := map[string]bool{"ok value\t1": true, "": true, "a\r\nb": false, "a\nb": false, "a\x00": false}
	for s, want := range values {
		if got := validValue([]byte(s)); got != want {
			t.Errorf("validValue(%q) = %v", s, got)
		}
	}
	uris := map[string]bool{"/": true, "/a?b=c%26d": true, "*": true, "http://h/p": true, "a": false, "/a b": false, "/a\x7f": false}
	for s, want := range uris {
		if got := validURI([]byte(s)); got != want {
			t.Errorf("validURI(%q) = %v", s, got)
		}
	}
}

func TestFeaturesString(t *testing.T) {
	if got := (FeatureBufferRequest | FeatureTrailers).String(); got != "buffer_request|trailers" {
		t.Errorf("String = %q", got)
	}
	if Supported&FeatureTrailers != 0 {
		t.Error("trailers supported")
	}
}

// TestRollback: the response header changes of a failed call are undone:
// by End for a call whose body read the host stopped, by Rollback after
// End for one that trapped. A call that succeeded keeps them.
func TestRollback(t *testing.T) {
	for _, how := range []string{"body error", "trap", "success"} {
		x := fakehttp.New("/")
		x.RespHeaders = []fakehttp.Field{{Name: "X-A", Value: "1"}, {Name: "X-B", Value: "kept"}, {Name: "X-A", Value: "2"}}
		var inv Invocation
		inv.Begin(x, PhaseResponse, FeatureBufferResponse)
		inv.saveResponseHeader("x-a")
		x.SetResponseHeader("x-a", "new")
		inv.saveResponseHeader("X-C")
		x.AddResponseHeader("X-C", "c")
		inv.saveResponseHeader("X-A") // already saved: its value before the call stays
		x.DelResponseHeader("X-A")
		if how == "body error" {
			inv.bodyErr = ErrResponseBodyTooLarge
		}
		if err := inv.End(false); (err != nil) != (how == "body error") {
			t.Fatalf("%s: End = %v", how, err)
		}
		if how == "trap" {
			inv.Rollback(x)
		}
		var got []string
		x.VisitResponseHeaders(func(n, v []byte) { got = append(got, string(n)+": "+string(v)) })
		want := "[X-B: kept X-A: 1 X-A: 2]"
		if how == "success" {
			want = "[X-B: kept X-C: c]"
		}
		if fmt.Sprint(got) != want {
			t.Errorf("%s: response headers %v, want %s", how, got, want)
		}
	}
}
