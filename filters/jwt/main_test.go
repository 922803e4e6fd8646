package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk/go/sluicetest"
)

func sign(t *testing.T, alg string, k any, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	in := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(in))
	var sig []byte
	switch key := k.(type) {
	case []byte:
		m := hmac.New(sha256.New, key)
		m.Write([]byte(in))
		sig = m.Sum(nil)
	case *rsa.PrivateKey:
		sig, _ = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	case *ecdsa.PrivateKey:
		r, s, _ := ecdsa.Sign(rand.Reader, key, sum[:])
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	}
	return in + "." + enc.EncodeToString(sig)
}

func pemOf(t *testing.T, pub any) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func TestJWT(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	secret := []byte("hs-secret")
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "kid": "ec1",
		"x": base64.RawURLEncoding.EncodeToString(ek.X.FillBytes(make([]byte, 32))),
		"y": base64.RawURLEncoding.EncodeToString(ek.Y.FillBytes(make([]byte, 32))),
	}}})
	cfgJSON, _ := json.Marshal(map[string]any{
		"keys":              []map[string]string{{"secret": string(secret)}, {"pem": pemOf(t, &rk.PublicKey)}},
		"jwks":              string(jwks),
		"issuer":            "https://issuer.example",
		"audience":          "api",
		"leeway":            10,
		"claims_to_headers": map[string]string{"sub": "X-User", "roles": "X-Roles"},
	})
	f := sluicetest.New(t, string(cfgJSON))
	fixed := time.Unix(1_800_000_000, 0)
	now = func() time.Time { return fixed }
	defer func() { now = time.Now }()
	good := map[string]any{"sub": "alice", "iss": "https://issuer.example", "aud": []string{"web", "api"}, "exp": fixed.Unix() + 60, "roles": []string{"a", "b"}}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for k, v := range good {
			c[k] = v
		}
		c[k] = v
		return c
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"HS256", sign(t, "HS256", secret, good), 200},
		{"RS256", sign(t, "RS256", rk, good), 200},
		{"ES256 from JWKS", sign(t, "ES256", ek, good), 200},
		{"wrong key", sign(t, "RS256", other, good), 401},
		{"alg none", strings.TrimSuffix(sign(t, "none", []byte{}, good), "") + "", 401},
		{"expired", sign(t, "HS256", secret, with("exp", fixed.Unix()-11)), 401},
		{"expired within leeway", sign(t, "HS256", secret, with("exp", fixed.Unix()-5)), 200},
		{"not yet", sign(t, "HS256", secret, with("nbf", fixed.Unix()+11)), 401},
		{"issuer", sign(t, "HS256", secret, with("iss", "https://evil")), 401},
		{"audience", sign(t, "HS256", secret, with("aud", "other")), 401},
		{"garbage", "a.b.c", 401},
		{"missing", "", 401},
	} {
		r := sluicetest.NewRequest("GET", "/", "")
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		r.Header.Set("X-User", "mallory")
		res := f.Do(r)
		if res.Status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, res.Status, tc.status, res.Body)
			continue
		}
		if tc.status == 200 && (res.Request.Header.Get("X-User") != "alice" || res.Request.Header.Get("X-Roles") != "a,b") {
			t.Errorf("%s: upstream saw X-User=%q X-Roles=%q", tc.name, res.Request.Header.Get("X-User"), res.Request.Header.Get("X-Roles"))
		}
		if tc.status == 401 && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, res.Header.Get("WWW-Authenticate"))
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []string{`{}`, `{"keys": [{"pem": "nope"}]}`, `{"keys": [{"secret": "x", "alg": "RS256"}]}`, `{"jwks": "{\"keys\": [{\"kty\": \"EC\", \"crv\": \"P-384\"}]}"}`, `{"keyz": []}`} {
		if _, err := sluicetest.Load(c); err == nil {
			t.Errorf("%s: loaded", c)
		}
	}
}
