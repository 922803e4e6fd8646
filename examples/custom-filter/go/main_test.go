package main

import (
	"testing"

	"github.com/sluicehq/sluice/sdk/go/sluicetest"
)

func TestFilter(t *testing.T) {
	f := sluicetest.New(t, `{"header": "X-Hello", "value": "world", "deny_prefix": "/private/"}`)

	res := f.Do(sluicetest.NewRequest("GET", "/public/a", ""))
	if !res.Next || res.Request.Header.Get("X-Hello") != "world" {
		t.Errorf("/public/a: next=%v X-Hello=%q, want continued with world", res.Next, res.Request.Header.Get("X-Hello"))
	}
	res = f.Do(sluicetest.NewRequest("GET", "/private/a", ""))
	if res.Next || res.Status != 403 || string(res.Body) != "forbidden\n" {
		t.Errorf("/private/a: next=%v status=%d body=%q, want 403 forbidden", res.Next, res.Status, res.Body)
	}
}

func TestUnknownConfigField(t *testing.T) {
	if _, err := sluicetest.Load(`{"hedaer": "x"}`); err == nil {
		t.Fatal("a misspelt config field loaded without error")
	}
}
