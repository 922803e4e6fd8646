// Command jwt is the jwt filter: it admits requests bearing a JSON Web
// Token signed with HS256, RS256 or ES256 by a configured key, checks its
// exp, nbf, iss and aud, and copies selected claims into request headers.
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	sluice "github.com/sluicehq/sluice/sdk/go"
)

type keyConfig struct {
	KID    string `json:"kid"`    // matched against the token's kid when both are set
	Alg    string `json:"alg"`    // HS256, RS256 or ES256; default from the key type
	Secret string `json:"secret"` // HS256 shared secret
	PEM    string `json:"pem"`    // RS256/ES256 public key or certificate, PEM
}

type config struct {
	Keys []keyConfig `json:"keys"`
	// JWKS is a JWK Set: an object, or a string holding one (file("jwks.json")).
	JWKS     json.RawMessage `json:"jwks"`
	Issuer   string          `json:"issuer"`
	Audience string          `json:"audience"`
	// Leeway is the clock skew allowed on exp and nbf, in seconds. Default 30.
	Leeway *float64 `json:"leeway"`
	// Header carries "Bearer TOKEN". Default "Authorization".
	Header string `json:"header"`
	// Query names a query parameter that may carry the token instead.
	Query string `json:"query"`
	// ClaimsToHeaders maps claim name to request header name.
	ClaimsToHeaders map[string]string `json:"claims_to_headers"`
}

type key struct {
	kid, alg string
	secret   []byte
	rsa      *rsa.PublicKey
	ec       *ecdsa.PublicKey
}

var (
	cfg    config
	keys   []key
	leeway time.Duration
	claims []string // sorted names of ClaimsToHeaders
	now    = time.Now
)

func setup() error {
	cfg = config{Header: "Authorization"}
	if err := sluice.Config(&cfg); err != nil {
		return err
	}
	keys = keys[:0]
	for i, kc := range cfg.Keys {
		k, err := configKey(kc)
		if err != nil {
			return fmt.Errorf("keys[%d]: %w", i, err)
		}
		keys = append(keys, k)
	}
	if len(cfg.JWKS) > 0 && string(cfg.JWKS) != "null" {
		ks, err := parseJWKS(cfg.JWKS)
		if err != nil {
			return fmt.Errorf("jwks: %w", err)
		}
		keys = append(keys, ks...)
	}
	if len(keys) == 0 {
		return errors.New("no keys: set keys (secret or pem) or jwks")
	}
	leeway = 30 * time.Second
	if cfg.Leeway != nil {
		if *cfg.Leeway < 0 {
			return errors.New("leeway must not be negative")
		}
		leeway = time.Duration(*cfg.Leeway * float64(time.Second))
	}
	if cfg.Header == "" && cfg.Query == "" {
		return errors.New("header and query are both empty: nowhere to find the token")
	}
	claims = claims[:0]
	for c := range cfg.ClaimsToHeaders {
		claims = append(claims, c)
	}
	sort.Strings(claims)
	return nil
}

func configKey(kc keyConfig) (key, error) {
	k := key{kid: kc.KID, alg: kc.Alg}
	switch {
	case kc.Secret != "" && kc.PEM != "":
		return k, errors.New("set secret or pem, not both")
	case kc.Secret != "":
		if k.alg == "" {
			k.alg = "HS256"
		}
		if k.alg != "HS256" {
			return k, fmt.Errorf("alg %q does not take a secret (HS256 does)", k.alg)
		}
		k.secret = []byte(kc.Secret)
		return k, nil
	case kc.PEM != "":
		b, _ := pem.Decode([]byte(kc.PEM))
		if b == nil {
			return k, errors.New("pem: no PEM block found")
		}
		var pub any
		var err error
		switch b.Type {
		case "CERTIFICATE":
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(b.Bytes); err == nil {
				pub = c.PublicKey
			}
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(b.Bytes)
		default:
			pub, err = x509.ParsePKIXPublicKey(b.Bytes)
		}
		if err != nil {
			return k, fmt.Errorf("pem: %w", err)
		}
		return withPublic(k, pub)
	}
	return k, errors.New("a key needs secret (HS256) or pem (RS256, ES256)")
}

func withPublic(k key, pub any) (key, error) {
	switch p := pub.(type) {
	case *rsa.PublicKey:
		if k.alg == "" {
			k.alg = "RS256"
		}
		if k.alg != "RS256" {
			return k, fmt.Errorf("alg %q does not fit an RSA key (RS256 does)", k.alg)
		}
		k.rsa = p
	case *ecdsa.PublicKey:
		if k.alg == "" {
			k.alg = "ES256"
		}
		if k.alg != "ES256" || p.Curve != elliptic.P256() {
			return k, errors.New("EC keys must be P-256 with alg ES256")
		}
		k.ec = p
	default:
		return k, fmt.Errorf("unsupported public key type %T", pub)
	}
	return k, nil
}

type jwk struct {
	Kty, Kid, Alg, Use, Crv, N, E, X, Y, K string
}

func parseJWKS(raw json.RawMessage) ([]key, error) {
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		raw = json.RawMessage(s)
	}
	var set struct{ Keys []jwk }
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, err
	}
	var out []key
	for i, j := range set.Keys {
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		k := key{kid: j.Kid, alg: j.Alg}
		var err error
		switch j.Kty {
		case "oct":
			k.secret, err = b64(j.K)
			if k.alg == "" {
				k.alg = "HS256"
			}
			if err == nil && k.alg != "HS256" {
				err = fmt.Errorf("alg %q is not supported for oct keys", k.alg)
			}
		case "RSA":
			var n, e []byte
			if n, err = b64(j.N); err == nil {
				if e, err = b64(j.E); err == nil {
					k, err = withPublic(k, &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())})
				}
			}
		case "EC":
			if j.Crv != "P-256" {
				err = fmt.Errorf("curve %q is not supported (P-256 is)", j.Crv)
				break
			}
			var x, y []byte
			if x, err = b64(j.X); err == nil {
				if y, err = b64(j.Y); err == nil {
					k, err = withPublic(k, &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)})
				}
			}
		default:
			err = fmt.Errorf("key type %q is not supported", j.Kty)
		}
		if err != nil {
			return nil, fmt.Errorf("keys[%d]: %w", i, err)
		}
		out = append(out, k)
	}
	return out, nil
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

var errNoToken = errors.New("no token")

// verify checks a compact JWS and returns its claims.
func verify(token string, t time.Time) (map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("malformed token")
	}
	hb, err := b64(parts[0])
	if err != nil {
		return nil, errors.New("malformed token header")
	}
	var hdr struct{ Alg, Kid string }
	if err := json.Unmarshal(hb, &hdr); err != nil {
		return nil, errors.New("malformed token header")
	}
	sig, err := b64(parts[2])
	if err != nil {
		return nil, errors.New("malformed signature")
	}
	signed := []byte(parts[0] + "." + parts[1])
	ok := false
	for _, k := range keys {
		if k.alg != hdr.Alg || (hdr.Kid != "" && k.kid != "" && k.kid != hdr.Kid) {
			continue
		}
		if k.check(signed, sig) {
			ok = true
			break
		}
	}
	if !ok {
		return nil, errors.New("invalid signature")
	}
	pb, err := b64(parts[1])
	if err != nil {
		return nil, errors.New("malformed claims")
	}
	var c map[string]any
	d := json.NewDecoder(strings.NewReader(string(pb)))
	d.UseNumber()
	if err := d.Decode(&c); err != nil {
		return nil, errors.New("malformed claims")
	}
	if exp, ok := numericDate(c["exp"]); ok && !t.Before(exp.Add(leeway)) {
		return nil, errors.New("token expired")
	} else if c["exp"] != nil && !ok {
		return nil, errors.New("malformed exp")
	}
	if nbf, ok := numericDate(c["nbf"]); ok && t.Add(leeway).Before(nbf) {
		return nil, errors.New("token not valid yet")
	} else if c["nbf"] != nil && !ok {
		return nil, errors.New("malformed nbf")
	}
	if cfg.Issuer != "" && c["iss"] != cfg.Issuer {
		return nil, errors.New("wrong issuer")
	}
	if cfg.Audience != "" && !hasAudience(c["aud"], cfg.Audience) {
		return nil, errors.New("wrong audience")
	}
	return c, nil
}

func (k key) check(signed, sig []byte) bool {
	sum := sha256.Sum256(signed)
	switch {
	case k.secret != nil:
		m := hmac.New(sha256.New, k.secret)
		m.Write(signed)
		return hmac.Equal(m.Sum(nil), sig)
	case k.rsa != nil:
		return rsa.VerifyPKCS1v15(k.rsa, crypto.SHA256, sum[:], sig) == nil
	case k.ec != nil:
		if len(sig) != 64 {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(k.ec, sum[:], r, s)
	}
	return false
}

func numericDate(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, 0).Add(time.Duration(f * float64(time.Second))), true
}

func hasAudience(v any, want string) bool {
	switch a := v.(type) {
	case string:
		return a == want
	case []any:
		for _, x := range a {
			if x == want {
				return true
			}
		}
	}
	return false
}

// claimValue renders a claim for a header: strings as they are, lists
// comma-separated, anything else as JSON.
func claimValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = claimValue(e)
		}
		return strings.Join(parts, ",")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func token(req sluice.Request) (string, error) {
	if cfg.Header != "" {
		if h, ok := req.Header().Lookup(cfg.Header); ok {
			if !strings.EqualFold(cfg.Header, "Authorization") {
				return strings.TrimSpace(h), nil
			}
			scheme, tok, found := strings.Cut(h, " ")
			if !found || !strings.EqualFold(scheme, "Bearer") {
				return "", errors.New("Authorization is not a Bearer token")
			}
			return strings.TrimSpace(tok), nil
		}
	}
	if cfg.Query != "" {
		if v, ok := req.Query(cfg.Query); ok {
			return v, nil
		}
	}
	return "", errNoToken
}

func unauthorized(resp sluice.Response, err error) bool {
	resp.SetStatus(401)
	if err == errNoToken {
		resp.Header().Set("WWW-Authenticate", `Bearer`)
	} else {
		resp.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="`+err.Error()+`"`)
	}
	resp.Header().Set("Content-Type", "text/plain; charset=utf-8")
	resp.Body().WriteString("401 Unauthorized: " + err.Error() + "\n")
	return false
}

func handle(req sluice.Request, resp sluice.Response) bool {
	tok, err := token(req)
	if err != nil {
		return unauthorized(resp, err)
	}
	c, err := verify(tok, now())
	if err != nil {
		return unauthorized(resp, err)
	}
	for _, name := range claims {
		h := cfg.ClaimsToHeaders[name]
		req.Header().Remove(h) // a client never sets these itself
		if v, ok := c[name]; ok && v != nil {
			req.Header().Set(h, claimValue(v))
		}
	}
	return true
}

func init() {
	sluice.Setup(setup)
	sluice.Handle(handle)
}

func main() {}
