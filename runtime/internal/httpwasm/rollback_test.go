package httpwasm_test

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/runtime/filtertest"
	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
)

// TestRollback: the response header changes of a failed call are undone:
// by End for a call whose body read the host stopped, by Rollback after
// End for one that trapped. A call that succeeded keeps them.
func TestRollback(t *testing.T) {
	for _, how := range []string{"body error", "trap", "success"} {
		x := filtertest.NewExchange("GET", "/")
		x.RespHdr = []filtertest.Field{{Name: "X-A", Value: "1"}, {Name: "X-B", Value: "kept"}, {Name: "X-A", Value: "2"}}
		var inv httpwasm.Invocation
		inv.Begin(x, httpwasm.PhaseResponse, httpwasm.FeatureBufferResponse)
		inv.SaveResponseHeader("x-a")
		x.SetResponseHeader("x-a", "new")
		inv.SaveResponseHeader("X-C")
		x.AddResponseHeader("X-C", "c")
		inv.SaveResponseHeader("X-A") // already saved: its value before the call stays
		x.DelResponseHeader("X-A")
		if how == "body error" {
			inv.SetBodyErr(httpwasm.ErrResponseBodyTooLarge)
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
