package generation

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/sluicehq/sluice/host/tlsconf"
)

// Validate builds the native parts of a checked config as serving it
// would, without starting or serving anything, and closes them again:
// each route's handler (static roots opened, proxy TLS files and
// upstreams loaded), its allow/deny list and rate limit, each site's error
// pages and TLS certificates (ACME sites obtain nothing). It returns one
// diagnostic per problem, all of them, at the attribute at fault where
// the error says which (a `ca` that is not PEM, a key that is not the
// certificate's), else at the route or site. Filters are checked by
// ValidateFilters. `sluice validate` runs both.
func Validate(cfg *config.Config) hcl.Diagnostics {
	var diags hcl.Diagnostics
	dir := ""
	if cfg.File != "" {
		dir = filepath.Dir(cfg.File) + string(filepath.Separator)
	}
	add := func(rng hcl.Range, summary string, err error) {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  summary,
			// Paths as the user wrote them: relative to the config file.
			Detail:  strings.ReplaceAll(err.Error(), dir, "") + ".",
			Subject: rng.Ptr(),
		})
	}
	d := Deps{Log: slog.New(slog.DiscardHandler)}
	for _, s := range cfg.Sites {
		if _, err := loadErrorPages(s.ErrorPages); err != nil {
			add(s.Range, "Cannot load error page", siteErr(s, err))
		}
		if s.TLS != nil {
			ts, err := tlsSite(cfg, s)
			if err == nil {
				err = tlsconf.Check([]tlsconf.Site{ts}) // names the site
			} else {
				err = siteErr(s, err)
			}
			if err != nil {
				add(siteTLSRange(s.TLS, err), "Unusable TLS file", err)
			}
		}
		for _, r := range s.Routes {
			g := &Generation{}
			_, err := buildRoute(r, d, g)
			if err == nil {
				_, _, _, err = gatewayFor(r, nil, s.Name) // validate opens no store connection
			}
			g.close(d.Log) // nothing was started: this only releases
			if err != nil {
				rng, summary := routeRange(r, err)
				add(rng, summary, siteErr(s, fmt.Errorf("route %q: %w", r.Path, err)))
			}
		}
	}
	return diags
}

func siteErr(s *config.Site, err error) error { return fmt.Errorf("site %q: %w", s.Name, err) }

// siteTLSRange is the attribute of a site's tls block that err blames,
// or the block's header.
func siteTLSRange(t *config.TLS, err error) hcl.Range {
	var fe *tlsconf.FileError
	if errors.As(err, &fe) {
		switch fe.Attr {
		case "cert":
			return t.CertRange
		case "key":
			return t.KeyRange
		case "client_ca":
			return t.ClientCARange
		}
	}
	return t.Range
}

// routeRange is the attribute of a route's handler that err blames, or
// the route's label, and the diagnostic's summary.
func routeRange(r *config.Route, err error) (hcl.Range, string) {
	var fe *proxy.FileError
	if p, ok := r.Handler().(*proxy.Options); ok && p.TLS != nil && errors.As(err, &fe) {
		switch t := p.TLS; fe.Attr {
		case "ca":
			return t.CARange, "Unusable TLS file"
		case "cert":
			return t.CertRange, "Unusable TLS file"
		case "key":
			return t.KeyRange, "Unusable TLS file"
		}
	}
	return r.Range, "Cannot build route"
}
