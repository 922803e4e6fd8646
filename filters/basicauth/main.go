// Command basicauth is the basicauth filter: HTTP Basic authentication
// against bcrypt password hashes from its config.
package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"

	sluice "github.com/sluicehq/sluice/sdk/go"
	"golang.org/x/crypto/bcrypt"
)

type config struct {
	// Realm is shown by browsers in the login prompt. Default "restricted".
	Realm string `json:"realm"`
	// Users maps user name to bcrypt hash ("$2a$…", "$2b$…", "$2y$…").
	Users map[string]string `json:"users"`
	// ConsumerHeader receives the user name upstream. Default
	// "X-Consumer"; "" sets none.
	ConsumerHeader *string `json:"consumer_header"`
	// HideCredentials removes Authorization before the upstream.
	HideCredentials bool `json:"hide_credentials"`
}

var (
	cfg       config
	challenge string
	consumer  string
	// verified remembers, per user, the SHA-256 of the last password that
	// matched its bcrypt hash, so an instance pays bcrypt once per user
	// and password, not once per request.
	verified = map[string][sha256.Size]byte{}
)

func setup() error {
	cfg = config{Realm: "restricted"}
	if err := sluice.Config(&cfg); err != nil {
		return err
	}
	if len(cfg.Users) == 0 {
		return errors.New(`users is required: a map of user name to bcrypt hash (make one with: htpasswd -nbB user password)`)
	}
	names := make([]string, 0, len(cfg.Users))
	for name := range cfg.Users {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.Contains(name, ":") || name == "" {
			return fmt.Errorf("users: invalid user name %q", name)
		}
		if _, err := bcrypt.Cost([]byte(cfg.Users[name])); err != nil {
			return fmt.Errorf("users: %q: not a bcrypt hash: %v", name, err)
		}
	}
	if strings.ContainsAny(cfg.Realm, "\"\\\r\n") {
		return errors.New(`realm must not contain quotes, backslashes or line breaks`)
	}
	challenge = `Basic realm="` + cfg.Realm + `", charset="UTF-8"`
	consumer = "X-Consumer"
	if cfg.ConsumerHeader != nil {
		consumer = *cfg.ConsumerHeader
	}
	clear(verified)
	return nil
}

func unauthorized(resp sluice.Response, why string) bool {
	resp.SetStatus(401)
	resp.Header().Set("WWW-Authenticate", challenge)
	resp.Header().Set("Content-Type", "text/plain; charset=utf-8")
	resp.Body().WriteString("401 Unauthorized: " + why + "\n")
	return false
}

// credentials parses "Basic base64(user:password)".
func credentials(h string) (user, password string, ok bool) {
	scheme, enc, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}

func check(user, password string) bool {
	hash, ok := cfg.Users[user]
	if !ok {
		// Spend the same time as a wrong password so user names can't be
		// told apart by timing.
		bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return false
	}
	sum := sha256.Sum256([]byte(password))
	if prev, ok := verified[user]; ok && subtle.ConstantTimeCompare(prev[:], sum[:]) == 1 {
		return true
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil {
		return false
	}
	verified[user] = sum
	return true
}

var dummy []byte

// dummyHash is a hash of the same cost as the configured ones.
func dummyHash() []byte {
	if dummy == nil {
		cost := bcrypt.DefaultCost
		for _, h := range cfg.Users {
			if c, err := bcrypt.Cost([]byte(h)); err == nil {
				cost = c
				break
			}
		}
		dummy, _ = bcrypt.GenerateFromPassword([]byte("sluice"), cost)
	}
	return dummy
}

func handle(req sluice.Request, resp sluice.Response) bool {
	h, present := req.Header().Lookup("Authorization")
	if !present {
		return unauthorized(resp, "credentials required")
	}
	user, password, ok := credentials(h)
	if !ok {
		return unauthorized(resp, "malformed Basic credentials")
	}
	if !check(user, password) {
		return unauthorized(resp, "invalid user name or password")
	}
	if consumer != "" {
		req.Header().Set(consumer, user)
	}
	if cfg.HideCredentials {
		req.Header().Remove("Authorization")
	}
	return true
}

func init() {
	sluice.Setup(setup)
	sluice.Handle(handle)
}

func main() {}
