package generation

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/tlsconf"
)

// tlsGen is a generation's TLS side: the certificates and policies of
// the sites on each TLS listener, and the identity header names every
// listener strips from requests.
type tlsGen struct {
	tables map[string]*tlsconf.Table // by configured address
	strip  []string
}

// table returns the table of a TLS listener, or nil.
func (g *tlsGen) table(addr string) *tlsconf.Table {
	if g == nil {
		return nil
	}
	return g.tables[addr]
}

// buildTLS loads the certificates and policies of every TLS listener of
// cfg into g (closed with g). It runs off the request path, at config
// load; a missing or broken file fails the load.
func buildTLS(cfg *config.Config, g *Generation, log *slog.Logger) error {
	tg := &tlsGen{tables: map[string]*tlsconf.Table{}}
	seen := map[string]bool{}
	for _, l := range cfg.Listeners {
		if !l.TLS {
			continue
		}
		var sites []tlsconf.Site
		for _, s := range cfg.Sites {
			if s.TLS == nil || !listensOn(s, l.Address) {
				continue
			}
			ts, err := tlsSite(cfg, s)
			if err != nil {
				return fmt.Errorf("site %q: tls: %w", s.Name, err)
			}
			ts.Default = s.Name == l.DefaultSite
			sites = append(sites, ts)
			if h := ts.ClientCertHeader; h != "" && !seen[h] {
				seen[h] = true
				tg.strip = append(tg.strip, h)
			}
		}
		if len(sites) == 0 {
			continue
		}
		t, err := tlsconf.New(sites, tlsconf.Options{Log: log})
		if err != nil {
			return fmt.Errorf("listener %q: %w", l.Address, err)
		}
		g.Closers = append(g.Closers, t.Close)
		g.Starters = append(g.Starters, t.Start)
		tg.tables[l.Address] = t
	}
	if len(tg.tables) > 0 || len(tg.strip) > 0 {
		g.tls = tg
	}
	return nil
}

func listensOn(s *config.Site, addr string) bool {
	for _, a := range s.Listen {
		if a == addr {
			return true
		}
	}
	return false
}

func tlsSite(cfg *config.Config, s *config.Site) (tlsconf.Site, error) {
	c := s.TLS
	ts := tlsconf.Site{
		Name:             s.Name,
		Hosts:            s.Aliases,
		CertFile:         c.Cert,
		KeyFile:          c.Key,
		ClientCAFile:     c.ClientCA,
		HSTS:             s.HSTS,
		ClientCertHeader: c.ClientCertHeader,
	}
	var err error
	if ts.ClientAuth, err = tlsconf.ParseClientAuth(c.ClientAuth); err != nil {
		return ts, err
	}
	switch c.MinVersion {
	case "", "1.2":
		ts.MinVersion = tls.VersionTLS12
	case "1.3":
		ts.MinVersion = tls.VersionTLS13
	default:
		return ts, fmt.Errorf("min_version %q: want \"1.2\" or \"1.3\"", c.MinVersion)
	}
	if a := c.ACME; a != nil {
		shared, err := sharedStore(cfg)
		if err != nil {
			return ts, err
		}
		storage := a.Storage
		if storage == "" && shared == nil {
			dir, err := os.UserConfigDir()
			if err != nil {
				return ts, fmt.Errorf("acme: no storage directory: %w", err)
			}
			storage = filepath.Join(dir, "sluice", "acme")
		}
		ts.ACME = &tlsconf.ACME{
			Email:      a.Email,
			Directory:  a.Directory,
			Challenges: a.Challenges,
			Storage:    storage,
		}
		if shared != nil {
			// Certificates, keys and the account live in the store, and
			// one instance orders for all.
			ts.ACME.Cache, ts.ACME.Lock = acmeCache{shared}, shared
		}
	}
	return ts, nil
}
