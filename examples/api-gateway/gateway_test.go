package apigateway_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"github.com/sluicehq/sluice/examples/internal/exampletest"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Secrets the test sets in the environment, where sluice.hcl reads them.
const (
	aliceKey  = "test-key-alice"
	bobKey    = "test-key-bob"
	jwtSecret = "test-secret"
)

// seen is what the backend reports about a request it received.
type seen struct {
	Path     string `json:"path"`
	Consumer string `json:"consumer"`
	APIKey   string `json:"api_key"`
	User     string `json:"user"`
	Roles    string `json:"roles"`
}

// TestGateway boots sluice.hcl in front of a backend that echoes what it
// was sent, and checks each route's admission rules.
func TestGateway(t *testing.T) {
	t.Setenv("ALICE_API_KEY", aliceKey)
	t.Setenv("BOB_API_KEY", bobKey)
	t.Setenv("JWT_SECRET", jwtSecret)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(seen{
			Path:     r.URL.Path,
			Consumer: r.Header.Get("X-Consumer"),
			APIKey:   r.Header.Get("X-API-Key"),
			User:     r.Header.Get("X-User"),
			Roles:    r.Header.Get("X-Roles"),
		})
	}))
	defer backend.Close()
	base := boot(t, backend.URL)

	t.Run("keyauth", func(t *testing.T) {
		for _, c := range []struct {
			name, key string
			status    int
			body      string
		}{
			{"no key", "", 401, "401 Unauthorized: no API key (send it in the X-API-Key header)\n"},
			{"wrong key", "nope", 401, "401 Unauthorized: invalid API key\n"},
			{"key of another config", "dev-key-alice", 401, "401 Unauthorized: invalid API key\n"},
		} {
			resp, body := do(t, "GET", base+"/api/keys/orders", http.Header{"X-API-Key": {c.key}})
			if resp.StatusCode != c.status || string(body) != c.body {
				t.Errorf("%s: %d %q, want %d %q", c.name, resp.StatusCode, body, c.status, c.body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "ApiKey") {
				t.Errorf("%s: WWW-Authenticate %q, want ApiKey", c.name, got)
			}
		}
		// A forged X-Consumer is replaced, and the key is not passed on.
		resp, body := do(t, "GET", base+"/api/keys/orders?id=7", http.Header{"X-API-Key": {aliceKey}, "X-Consumer": {"admin"}})
		var s seen
		if resp.StatusCode != 200 || json.Unmarshal(body, &s) != nil {
			t.Fatalf("right key: %d %q", resp.StatusCode, body)
		}
		if s != (seen{Path: "/orders", Consumer: "alice"}) {
			t.Errorf("right key: the backend saw %+v, want path /orders, consumer alice and no key", s)
		}
	})

	t.Run("jwt", func(t *testing.T) {
		now := time.Now().Unix()
		good := map[string]any{"sub": "u-123", "roles": []string{"reader", "writer"}, "iss": "https://auth.example.com/", "aud": "api", "iat": now, "exp": now + 300}
		with := func(k string, v any) map[string]any {
			c := map[string]any{}
			for k, v := range good {
				c[k] = v
			}
			c[k] = v
			return c
		}
		resp, body := do(t, "GET", base+"/api/jwt/profile", http.Header{"Authorization": {"Bearer " + mint(jwtSecret, "HS256", good)}, "X-User": {"forged"}})
		var s seen
		if resp.StatusCode != 200 || json.Unmarshal(body, &s) != nil {
			t.Fatalf("valid token: %d %q", resp.StatusCode, body)
		}
		if s != (seen{Path: "/profile", User: "u-123", Roles: "reader,writer"}) {
			t.Errorf("valid token: the backend saw %+v, want path /profile, user u-123, roles reader,writer", s)
		}

		for _, c := range []struct{ name, auth, challenge string }{
			{"no token", "", "Bearer"},
			{"expired", "Bearer " + mint(jwtSecret, "HS256", with("exp", now-3600)), `Bearer error="invalid_token"`},
			{"bad signature", "Bearer " + mint("another-secret", "HS256", good), `Bearer error="invalid_token"`},
			{"wrong audience", "Bearer " + mint(jwtSecret, "HS256", with("aud", "billing")), `Bearer error="invalid_token"`},
			{"wrong issuer", "Bearer " + mint(jwtSecret, "HS256", with("iss", "https://evil.example/")), `Bearer error="invalid_token"`},
			{"alg none", "Bearer " + mint("", "none", good), `Bearer error="invalid_token"`},
			{"garbage", "Bearer not.a.token", `Bearer error="invalid_token"`},
		} {
			resp, body := do(t, "GET", base+"/api/jwt/profile", http.Header{"Authorization": {c.auth}})
			if resp.StatusCode != 401 || !strings.HasPrefix(string(body), "401 Unauthorized") {
				t.Errorf("%s: %d %q, want 401", c.name, resp.StatusCode, body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, c.challenge) {
				t.Errorf("%s: WWW-Authenticate %q, want %s…", c.name, got, c.challenge)
			}
		}
	})

	t.Run("rate limit", func(t *testing.T) {
		// burst = 5 at 60/m: bob gets about 5 in a row, then 429 for a
		// second. The bucket is bob's: alice is still served.
		ok, limited := 0, (*http.Response)(nil)
		for i := 0; i < 20 && limited == nil; i++ {
			resp, _ := do(t, "GET", base+"/api/keys/orders", http.Header{"X-API-Key": {bobKey}})
			switch resp.StatusCode {
			case 200:
				ok++
			case 429:
				limited = resp
			default:
				t.Fatalf("request %d: %d", i, resp.StatusCode)
			}
		}
		if limited == nil || ok < 5 || ok > 7 {
			t.Fatalf("%d requests admitted before a 429 (got one: %v), want about the burst of 5", ok, limited != nil)
		}
		if s, err := strconv.Atoi(limited.Header.Get("Retry-After")); err != nil || s < 1 || s > 2 {
			t.Errorf("429: Retry-After %q, want 1 or 2 seconds", limited.Header.Get("Retry-After"))
		}
		if resp, _ := do(t, "GET", base+"/api/keys/orders", http.Header{"X-API-Key": {aliceKey}}); resp.StatusCode != 200 {
			t.Errorf("alice while bob is limited: %d, want 200", resp.StatusCode)
		}
		// Rejected requests never reach the limiter: a stranger's 401s do
		// not use up anyone's bucket, and are never answered 429.
		for i := 0; i < 10; i++ {
			if resp, _ := do(t, "GET", base+"/api/keys/orders", nil); resp.StatusCode != 401 {
				t.Fatalf("no key, request %d: %d, want 401", i, resp.StatusCode)
			}
		}
	})

	t.Run("admin allow list", func(t *testing.T) {
		if resp, body := do(t, "GET", base+"/admin/stats", nil); resp.StatusCode != 200 || !strings.Contains(string(body), `"path":"/admin/stats"`) {
			t.Errorf("from 127.0.0.1: %d %q, want 200 from the backend", resp.StatusCode, body)
		}
		// 127.0.0.2 is this machine too (the loopback network), but not on
		// the list; a client's own X-Forwarded-For is not believed.
		other := &http.Client{
			Timeout: 5 * time.Second,
			Transport: &http.Transport{DialContext: (&net.Dialer{
				LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)},
			}).DialContext},
		}
		for _, h := range []http.Header{nil, {"X-Forwarded-For": {"127.0.0.1"}}} {
			req, _ := http.NewRequest("GET", base+"/admin/stats", nil)
			for k, v := range h {
				req.Header[k] = v
			}
			resp, err := other.Do(req)
			if err != nil {
				t.Skipf("cannot connect from 127.0.0.2 here: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 403 {
				t.Errorf("from 127.0.0.2 with %v: %d %q, want 403", h, resp.StatusCode, body)
			}
		}
	})

	t.Run("unknown path", func(t *testing.T) {
		resp, body := do(t, "GET", base+"/v1/orders", nil)
		if resp.StatusCode != 404 || string(body) != "{\"error\":\"no such API\"}\n" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET /v1/orders: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	})
}

// mint returns a compact JWS of claims: HS256 with secret, or alg "none"
// with no signature.
func mint(secret, alg string, claims map[string]any) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signing := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	if alg == "none" {
		return signing + "."
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}

func do(t *testing.T, method, url string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	return exampletest.Do(t, method, url, h)
}

// boot starts sluice.hcl on free ports with upstream as its backend and
// returns the site's base URL.
func boot(t *testing.T, upstream string) string {
	t.Helper()
	addr := exampletest.FreeAddr(t)
	exampletest.Boot(t, map[string]string{
		"http://127.0.0.1:9000": upstream,
		"127.0.0.1:8080":        addr,
		"127.0.0.1:2019":        exampletest.FreeAddr(t),
	})
	return "http://" + addr
}
