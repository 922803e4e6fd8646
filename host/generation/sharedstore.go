package generation

import (
	"context"
	"errors"
	"log/slog"

	"golang.org/x/crypto/acme/autocert"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/store"
)

// sharedStore opens the config's `store` block, or returns nil without
// one. Open keeps one pool per distinct block for the process, so every
// generation that keeps the block keeps the connections.
func sharedStore(cfg *config.Config) (*store.Store, error) {
	c := cfg.Store
	if c == nil {
		return nil, nil
	}
	o := store.Options{Address: c.Address, Username: c.Username, Password: c.Password, Prefix: c.Prefix, Timeout: c.Timeout, TLS: c.TLS}
	return store.Open(o)
}

// checkStore opens the config's store and asks it for an answer, once
// per load, under its timeout. An unreachable store is no reason to
// refuse a config (requests follow on_store_error until it answers), but
// worth a warning; a store that cannot even be opened (a bad TLS file)
// is.
func checkStore(cfg *config.Config, log *slog.Logger) error {
	s, err := sharedStore(cfg)
	if err != nil || s == nil {
		return err
	}
	if err := s.Ping(context.Background()); err != nil {
		log.Warn("store: not answering; rate limits follow on_store_error until it does", "address", cfg.Store.Address, "error", err)
	}
	return nil
}

// acmeCache is the store as ACME storage (tlsconf.Storage): keys under
// "acme:", a missing one autocert's cache miss.
type acmeCache struct{ s *store.Store }

func (c acmeCache) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := c.s.Get(ctx, "acme:"+key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, autocert.ErrCacheMiss
	}
	return b, err
}

func (c acmeCache) Put(ctx context.Context, key string, data []byte) error {
	return c.s.Put(ctx, "acme:"+key, data)
}

func (c acmeCache) Delete(ctx context.Context, key string) error {
	return c.s.Delete(ctx, "acme:"+key)
}
