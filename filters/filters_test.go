package filters_test

import (
	"context"
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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
	"golang.org/x/crypto/bcrypt"
)

var (
	engineOnce sync.Once
	engine     *runtime.Engine
	engineErr  error
)

// sharedEngine compiles each module once per test binary, and keeps the
// compiled code on disk across runs: Go guests take seconds to compile.
func sharedEngine(t testing.TB) *runtime.Engine {
	engineOnce.Do(func() {
		engine, engineErr = runtime.NewEngine(context.Background(), runtime.EngineOptions{
			CacheDir: filepath.Join(os.TempDir(), "sluice-test-wasm-cache"),
		})
	})
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	return engine
}

// load starts filter NAME (NAME/NAME.wasm) with config.
func load(t testing.TB, name, config string) *filtertest.Filter {
	t.Helper()
	f, err := loadErr(t, name, config)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func loadErr(t testing.TB, name, config string) (*filtertest.Filter, error) {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join(name, name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return filtertest.LoadOn(context.Background(), sharedEngine(t), name, wasm, runtime.FilterOptions{
		Config: []byte(config), PoolSize: 1, MemoryLimit: memoryLimit(name), Timeout: 5 * time.Second,
		InitTimeout: time.Minute,
	})
}

// memoryLimit is the memory a filter is tested with: 16 MiB, but for
// the waf filter, whose rule set alone takes tens of MiB.
func memoryLimit(name string) int64 {
	if name == "waf" {
		return 256 << 20
	}
	return 16 << 20
}

// do runs a request; next, when not nil, is the upstream.
func do(t *testing.T, f *filtertest.Filter, x *filtertest.Exchange, next filtertest.Next) filtertest.Result {
	t.Helper()
	res, err := f.Do(x, next)
	if err != nil {
		t.Fatalf("%s %s: %v", x.Meth, x.URI, err)
	}
	return res
}

func TestKeyAuth(t *testing.T) {
	f := load(t, "keyauth", `{"header": "apikey", "query": "apikey", "keys": {"alice": "k-alice", "bob": "k-bob"}}`)
	for _, tc := range []struct {
		name, uri string
		headers   []string
		status    int
		consumer  string
	}{
		{"header", "/", []string{"apikey", "k-bob"}, 200, "bob"},
		{"query", "/x?a=1&apikey=k-alice", nil, 200, "alice"},
		{"spoofed consumer", "/", []string{"apikey", "k-alice", "X-Consumer", "bob"}, 200, "alice"},
		{"missing", "/", nil, 401, ""},
		{"wrong", "/", []string{"apikey", "k-alicE"}, 401, ""},
		{"prefix of a key", "/", []string{"apikey", "k-ali"}, 401, ""},
	} {
		x := filtertest.NewExchange("GET", tc.uri, tc.headers...)
		res := do(t, f, x, nil)
		if x.Status() != tc.status || res.Continued != (tc.status == 200) {
			t.Errorf("%s: status %d continued %v, want %d", tc.name, x.Status(), res.Continued, tc.status)
		}
		if tc.status == 200 && x.Header("X-Consumer") != tc.consumer {
			t.Errorf("%s: X-Consumer %q, want %q", tc.name, x.Header("X-Consumer"), tc.consumer)
		}
		if tc.status == 401 && !strings.Contains(x.RespBody.String(), "API key") {
			t.Errorf("%s: body %q does not explain", tc.name, x.RespBody.String())
		}
	}

	f = load(t, "keyauth", `{"query": "key", "keys": ["k1", "k2"], "hide_credentials": true}`)
	x := filtertest.NewExchange("GET", "/p?key=k2&q=1", "X-Consumer", "spoof")
	if res := do(t, f, x, nil); !res.Continued || x.URI != "/p?q=1" || x.Header("X-Consumer") != "" {
		t.Errorf("list keys, hidden: continued %v uri %q X-Consumer %q", res.Continued, x.URI, x.Header("X-Consumer"))
	}

	for _, bad := range []string{`{}`, `{"keys": {}}`, `{"keys": [""]}`, `{"keys": ["a"], "header": ""}`} {
		if f, err := loadErr(t, "keyauth", bad); err == nil {
			f.Close()
			t.Errorf("config %s loaded", bad)
		}
	}
}

func TestBasicAuth(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	f := load(t, "basicauth", `{"realm": "staff", "users": {"alice": "`+string(hash)+`"}}`)
	for _, tc := range []struct {
		name, auth string
		status     int
	}{
		{"good", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")), 200},
		{"wrong", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:nope")), 401},
		{"none", "", 401},
	} {
		var h []string
		if tc.auth != "" {
			h = []string{"Authorization", tc.auth}
		}
		x := filtertest.NewExchange("GET", "/", h...)
		do(t, f, x, nil)
		if x.Status() != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, x.Status(), tc.status)
		}
		if tc.status == 401 && x.RespHeader("WWW-Authenticate") != `Basic realm="staff", charset="UTF-8"` {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, x.RespHeader("WWW-Authenticate"))
		}
		if tc.status == 200 && x.Header("X-Consumer") != "alice" {
			t.Errorf("%s: X-Consumer %q", tc.name, x.Header("X-Consumer"))
		}
	}
	if f, err := loadErr(t, "basicauth", `{"users": {"a": "not-a-hash"}}`); err == nil {
		f.Close()
		t.Error("a plain-text password loaded")
	}
}

func signJWT(alg string, k any, claims map[string]any) string {
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

func TestJWT(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	ecder, _ := x509.MarshalPKIXPublicKey(&ek.PublicKey)
	cfg, _ := json.Marshal(map[string]any{
		"keys": []map[string]string{
			{"secret": "hs-secret"},
			{"pem": string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))},
			{"pem": string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecder}))},
		},
		"issuer": "iss", "audience": "api", "leeway": 5,
		"claims_to_headers": map[string]string{"sub": "X-User"},
	})
	f := load(t, "jwt", string(cfg))
	now := time.Now().Unix()
	good := map[string]any{"sub": "alice", "iss": "iss", "aud": "api", "exp": now + 60, "nbf": now - 1}
	expired := map[string]any{"sub": "alice", "iss": "iss", "aud": "api", "exp": now - 60}
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"HS256", signJWT("HS256", []byte("hs-secret"), good), 200},
		{"RS256", signJWT("RS256", rk, good), 200},
		{"ES256", signJWT("ES256", ek, good), 200},
		{"bad HMAC", signJWT("HS256", []byte("other"), good), 401},
		{"expired", signJWT("HS256", []byte("hs-secret"), expired), 401},
		{"none", "", 401},
	} {
		var h []string
		if tc.token != "" {
			h = []string{"Authorization", "Bearer " + tc.token}
		}
		x := filtertest.NewExchange("GET", "/", append(h, "X-User", "mallory")...)
		do(t, f, x, nil)
		if x.Status() != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, x.Status(), tc.status, x.RespBody.String())
		}
		if tc.status == 200 && x.Header("X-User") != "alice" {
			t.Errorf("%s: X-User %q", tc.name, x.Header("X-User"))
		}
	}
}

func TestHeaders(t *testing.T) {
	f := load(t, "headers", `{
		"request":  {"set": {"X-Env": "prod"}, "add": {"X-Tag": ["a", "b"]}, "remove": ["Cookie"]},
		"response": {"set": {"X-Frame-Options": "DENY"}, "remove": ["Server"]}
	}`)
	x := filtertest.NewExchange("GET", "/", "Cookie", "c=1", "X-Env", "dev")
	res := do(t, f, x, func(x *filtertest.Exchange) {
		x.SetResponseHeader("Server", "upstream/1.0")
		x.RespBody.WriteString("hi")
	})
	if !res.Continued || x.Header("X-Env") != "prod" || x.Header("Cookie") != "" {
		t.Errorf("request: %+v", x.ReqHdr)
	}
	var tags []string
	x.VisitRequestHeaders(func(n, v []byte) {
		if strings.EqualFold(string(n), "X-Tag") {
			tags = append(tags, string(v))
		}
	})
	if strings.Join(tags, ",") != "a,b" {
		t.Errorf("X-Tag %v, want a,b", tags)
	}
	if x.RespHeader("X-Frame-Options") != "DENY" || x.RespHeader("Server") != "" || x.RespBody.String() != "hi" {
		t.Errorf("response: %+v body %q", x.RespHdr, x.RespBody.String())
	}
	if f, err := loadErr(t, "headers", `{"requets": {}}`); err == nil {
		f.Close()
		t.Error("a misspelt field loaded")
	}
}

func TestRewrite(t *testing.T) {
	f := load(t, "rewrite", `{
		"strip_prefix": "/api",
		"add_prefix": "/v2",
		"rules": [
			{"match": "^/v2/old/(.*)$", "replace": "https://new.example.com/$1", "redirect": 301},
			{"match": "^/v2/users/([0-9]+)$", "replace": "/v2/people?id=$1"},
			{"match": "^/v2/(a|b)/(.*)$", "replace": "/v2/$2/$1"}
		]
	}`)
	for _, tc := range []struct {
		in, out  string
		status   int
		location string
	}{
		{"/api/items?x=1", "/v2/items?x=1", 200, ""},
		{"/api/users/42?x=1", "/v2/people?id=42", 200, ""},
		{"/api/a/z", "/v2/z/a", 200, ""},
		{"/other", "/v2/other", 200, ""},
		{"/api/old/p?q=1", "", 301, "https://new.example.com/p?q=1"},
	} {
		x := filtertest.NewExchange("GET", tc.in)
		res := do(t, f, x, nil)
		if x.Status() != tc.status || (tc.status == 200 && (!res.Continued || x.URI != tc.out)) {
			t.Errorf("%s: status %d uri %q, want %d %q", tc.in, x.Status(), x.URI, tc.status, tc.out)
		}
		if tc.location != "" && x.RespHeader("Location") != tc.location {
			t.Errorf("%s: Location %q, want %q", tc.in, x.RespHeader("Location"), tc.location)
		}
	}
	for _, bad := range []string{`{"rules": [{"match": "(", "replace": "/"}]}`, `{"rules": [{"match": "a", "replace": "/", "redirect": 200}]}`, `{"rules": [{"match": "a", "replace": "http://x/"}]}`} {
		if f, err := loadErr(t, "rewrite", bad); err == nil {
			f.Close()
			t.Errorf("config %s loaded", bad)
		}
	}
}

func TestCORS(t *testing.T) {
	f := load(t, "cors", `{"allowed_origins": ["https://app.example"], "allowed_methods": ["GET", "PUT"], "allowed_headers": ["Content-Type"], "exposed_headers": ["X-Total"], "allow_credentials": true, "max_age": 600}`)

	x := filtertest.NewExchange("OPTIONS", "/r", "Origin", "https://app.example", "Access-Control-Request-Method", "PUT")
	if res := do(t, f, x, nil); res.Continued || x.Status() != 204 {
		t.Fatalf("preflight: continued %v status %d", res.Continued, x.Status())
	}
	for k, want := range map[string]string{
		"Access-Control-Allow-Origin":      "https://app.example",
		"Access-Control-Allow-Methods":     "GET, PUT",
		"Access-Control-Allow-Headers":     "Content-Type",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Max-Age":           "600",
	} {
		if got := x.RespHeader(k); got != want {
			t.Errorf("preflight %s: %q, want %q", k, got, want)
		}
	}
	// One Vary field on a preflight, naming all three request fields.
	var vary []string
	for _, h := range x.RespHdr {
		if strings.EqualFold(h.Name, "Vary") {
			vary = append(vary, h.Value)
		}
	}
	if len(vary) != 1 || vary[0] != "Origin, Access-Control-Request-Method, Access-Control-Request-Headers" {
		t.Errorf("preflight Vary: %q, want one field", vary)
	}

	x = filtertest.NewExchange("GET", "/r", "Origin", "https://app.example")
	if res := do(t, f, x, nil); !res.Continued || x.RespHeader("Access-Control-Allow-Origin") != "https://app.example" || x.RespHeader("Access-Control-Expose-Headers") != "X-Total" {
		t.Errorf("actual request: %+v", x.RespHdr)
	}

	x = filtertest.NewExchange("GET", "/r", "Origin", "https://evil.example")
	if do(t, f, x, nil); x.RespHeader("Access-Control-Allow-Origin") != "" {
		t.Errorf("disallowed origin got %q", x.RespHeader("Access-Control-Allow-Origin"))
	}
	x = filtertest.NewExchange("GET", "/r")
	if res := do(t, f, x, nil); !res.Continued || len(x.RespHdr) != 0 {
		t.Errorf("no Origin: %+v", x.RespHdr)
	}
}
