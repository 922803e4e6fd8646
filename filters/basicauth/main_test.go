package main

import (
	"testing"

	"github.com/sluicehq/sluice/sdk/go/sluicetest"
	"golang.org/x/crypto/bcrypt"
)

func TestBasicAuth(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	f := sluicetest.New(t, `{"realm": "api", "users": {"alice": "`+string(hash)+`"}, "hide_credentials": true}`)
	for _, tc := range []struct {
		name, auth string
		status     int
	}{
		{"none", "", 401},
		{"good", "Basic YWxpY2U6czNjcmV0", 200},   // alice:s3cret
		{"again", "Basic YWxpY2U6czNjcmV0", 200},  // cached
		{"wrong", "Basic YWxpY2U6d3Jvbmc=", 401},  // alice:wrong
		{"nobody", "Basic Ym9iOnMzY3JldA==", 401}, // bob:s3cret
		{"garbage", "Basic !!!", 401},
		{"bearer", "Bearer abc", 401},
	} {
		r := sluicetest.NewRequest("GET", "/", "")
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		r.Header.Set("X-Consumer", "mallory")
		res := f.Do(r)
		if res.Status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, res.Status, tc.status)
		}
		if tc.status == 401 && res.Header.Get("WWW-Authenticate") != `Basic realm="api", charset="UTF-8"` {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, res.Header.Get("WWW-Authenticate"))
		}
		if tc.status == 200 && (res.Request.Header.Get("X-Consumer") != "alice" || res.Request.Header.Get("Authorization") != "") {
			t.Errorf("%s: upstream saw X-Consumer=%q Authorization=%q", tc.name, res.Request.Header.Get("X-Consumer"), res.Request.Header.Get("Authorization"))
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []string{`{}`, `{"users": {"a": "plain"}}`, `{"user": {}}`, `{"users": {"a": "$2a$04$abc"}, "realm": "a\"b"}`} {
		if _, err := sluicetest.Load(c); err == nil {
			t.Errorf("%s: loaded", c)
		}
	}
}
