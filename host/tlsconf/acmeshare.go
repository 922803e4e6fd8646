package tlsconf

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme/autocert"
)

// Storage is where an ACME manager keeps the account key, certificates
// and pending challenge answers: autocert.Cache (Get, Put and Delete by
// name; autocert.ErrCacheMiss for a name not stored). There are two: a
// directory (autocert.DirCache, ACME.Storage, the default) and the shared
// store (host/store on Redis), which several instances read alike.
type Storage = autocert.Cache

// Locker is a lock with an expiry that every instance sharing a Storage
// sees: host/store.Store (SET NX PX, released by compare-and-delete).
type Locker interface {
	// TryLock takes name for ttl unless another holds it.
	TryLock(ctx context.Context, name string, ttl time.Duration) (token string, ok bool, err error)
	// Unlock releases name if token still holds it.
	Unlock(ctx context.Context, name, token string) error
}

// orderLockTTL bounds how long one instance may take to order a
// certificate before another may try: longer than an order takes (a few
// seconds), short enough that a crashed orderer delays the others little.
const orderLockTTL = 2 * time.Minute

// errOrderedElsewhere is what a shared storage answers for a certificate
// that another instance is ordering: the caller retries later, and finds
// it stored.
var errOrderedElsewhere = errors.New("acme: another instance is ordering this certificate")

// sharedCache makes autocert, which knows nothing of other instances,
// order each certificate once across every instance that shares the
// storage. autocert reads a certificate from its Cache before it orders
// one, at first use and at each renewal; sharedCache answers that read:
//
//   - a stored certificate that is not due for renewal is returned, and
//     autocert serves it (and renews it on its own timer);
//   - otherwise (none, or due) the instance that takes the lock
//     "acme:NAME" gets a cache miss, so autocert orders; the Put of the
//     new certificate releases the lock;
//   - the others get errOrderedElsewhere when there is no certificate yet
//     (obtain retries within a second or two), or wait, when one is due,
//     until the new one is stored or the lock is free.
//
// The account key is taken the same way, so every instance uses one
// account. The CA transport also refuses a new order for names whose lock
// this instance does not hold (acmeTransport.gate), which holds even where
// autocert orders without reading first.
type sharedCache struct {
	inner       Storage
	lock        Locker
	renewBefore time.Duration
	log         *slog.Logger

	mu   sync.Mutex
	held map[string]heldLock // cache key → this instance's lock
}

type heldLock struct {
	token string
	until time.Time
}

const accountKey = "acme_account+key"

func (c *sharedCache) Get(ctx context.Context, key string) ([]byte, error) {
	cert := !strings.HasSuffix(key, "+token") && !strings.HasSuffix(key, "+http-01")
	if !cert {
		return c.inner.Get(ctx, key)
	}
	for wait := 100 * time.Millisecond; ; wait = min(wait*2, 2*time.Second) {
		data, err := c.inner.Get(ctx, key)
		if err != nil && !errors.Is(err, autocert.ErrCacheMiss) {
			return nil, err
		}
		if err == nil && !c.due(key, data) {
			return data, nil
		}
		if c.holds(key) {
			return nil, autocert.ErrCacheMiss // order (again): the lock is ours
		}
		token, ok, lerr := c.lock.TryLock(ctx, "acme:"+key, orderLockTTL)
		if lerr != nil {
			return nil, lerr
		}
		if ok {
			c.mu.Lock()
			if c.held == nil {
				c.held = map[string]heldLock{}
			}
			c.held[key] = heldLock{token: token, until: time.Now().Add(orderLockTTL - 10*time.Second)}
			c.mu.Unlock()
			if key != accountKey {
				c.log.Info("acme: this instance orders the certificate for all", "name", key, "renewal", err == nil)
			}
			return nil, autocert.ErrCacheMiss
		}
		if err != nil && key != accountKey {
			return nil, errOrderedElsewhere
		}
		// A due certificate (or the account key) is being replaced
		// elsewhere: wait for it rather than order a second one.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (c *sharedCache) Put(ctx context.Context, key string, data []byte) error {
	err := c.inner.Put(ctx, key, data)
	c.mu.Lock()
	h, ok := c.held[key]
	delete(c.held, key)
	c.mu.Unlock()
	if ok {
		// Released even when the Put failed: another instance may do
		// better than this one.
		if uerr := c.lock.Unlock(ctx, "acme:"+key, h.token); uerr != nil && err == nil {
			c.log.Warn("acme: could not release the order lock; it expires by itself", "name", key, "error", uerr)
		}
	}
	return err
}

func (c *sharedCache) Delete(ctx context.Context, key string) error { return c.inner.Delete(ctx, key) }

// holds reports whether this instance holds the lock for key.
func (c *sharedCache) holds(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.held[key]
	if ok && time.Now().After(h.until) {
		delete(c.held, key)
		return false
	}
	return ok
}

// holdsName reports whether this instance holds the lock of name's
// certificate (ECDSA or RSA).
func (c *sharedCache) holdsName(name string) bool {
	return c.holds(name) || c.holds(name+"+rsa")
}

// due reports whether a stored certificate should be replaced: autocert's
// threshold (RenewBefore, else a third of the lifetime, at most 30 days)
// without its jitter, so a certificate autocert would still keep is never
// due. The account key is never due.
func (c *sharedCache) due(key string, data []byte) bool {
	if key == accountKey {
		return false
	}
	leaf := firstCert(data)
	if leaf == nil {
		return true
	}
	threshold := min(leaf.NotAfter.Sub(leaf.NotBefore)/3, 30*24*time.Hour)
	if c.renewBefore > 0 {
		threshold = min(c.renewBefore, 30*24*time.Hour)
	}
	return !time.Now().Before(leaf.NotAfter.Add(-threshold))
}

// firstCert parses the first certificate of a PEM bundle as autocert
// stores it (key, then chain), or returns nil.
func firstCert(data []byte) *x509.Certificate {
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return nil
		}
		if b.Type == "CERTIFICATE" {
			leaf, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil
			}
			return leaf
		}
	}
}

// errNotOrderer is the CA transport's answer to a new order for a name
// whose lock another instance holds.
var errNotOrderer = errors.New("acme: refusing to order: another instance holds the order lock")

// gate watches the conversation with the CA: it learns the newOrder URL
// from the directory, and for each new order logs the names and, with a
// shared storage, refuses it unless this instance holds their lock. It
// returns a replacement request body (the one it read) or an error.
func (t *acmeTransport) gate(req *http.Request) error {
	if req.Method != http.MethodPost || req.Body == nil {
		return nil
	}
	t.mu.Lock()
	newOrder := t.newOrder
	t.mu.Unlock()
	if newOrder == "" || req.URL.String() != newOrder {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body.Close()
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	names := orderNames(body)
	if t.m.shared != nil {
		for _, n := range names {
			if !t.m.shared.holdsName(n) {
				t.m.log.Warn("acme: not ordering", "name", n, "error", errNotOrderer)
				return errNotOrderer
			}
		}
	}
	t.m.log.Info("acme: new order", "names", strings.Join(names, ","))
	return nil
}

// learn records the directory's newOrder URL from a directory answer.
func (t *acmeTransport) learn(body []byte) {
	var dir struct {
		NewOrder string `json:"newOrder"`
	}
	if json.Unmarshal(body, &dir) == nil && dir.NewOrder != "" {
		t.mu.Lock()
		t.newOrder = dir.NewOrder
		t.mu.Unlock()
	}
}

// orderNames returns the DNS identifiers of a new-order request (a JWS
// whose payload is {"identifiers": [{"type": "dns", "value": NAME}]}).
func orderNames(jws []byte) []string {
	var msg struct {
		Payload string `json:"payload"`
	}
	if json.Unmarshal(jws, &msg) != nil {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(msg.Payload)
	if err != nil {
		return nil
	}
	var order struct {
		Identifiers []struct{ Type, Value string } `json:"identifiers"`
	}
	if json.Unmarshal(raw, &order) != nil {
		return nil
	}
	var names []string
	for _, id := range order.Identifiers {
		names = append(names, id.Value)
	}
	return names
}
