package httpwasm

import (
	"testing"
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
