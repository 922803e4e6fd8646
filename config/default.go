package config

import (
	"path/filepath"
)

// DefaultListen is the address Default uses when listen is "".
const DefaultListen = "127.0.0.1:8080"

// Default returns the built-in config: one catch-all site "*" serving the
// directory root (default ".", made absolute) on listen (default
// DefaultListen), with directory listings when browse is set, no filters,
// no admin listener and all other settings at their defaults. It is the
// config of the equivalent file:
//
//	site "*" {
//	  listen = [LISTEN]
//	  route "/" {
//	    static {
//	      root   = ROOT
//	      browse = BROWSE
//	    }
//	  }
//	}
//
// Default does not check that root exists.
func Default(root, listen string, browse bool) *Config {
	if root == "" {
		root = "."
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if listen == "" {
		listen = DefaultListen
	}
	st := defaultStatic(root)
	st.Browse = browse
	site := &Site{
		Name:          "*",
		Aliases:       []string{},
		Listen:        []string{listen},
		HTTPSRedirect: []string{},
		ErrorPages:    map[int]string{},
		Routes: []*Route{{
			Path:    "/",
			Filters: []string{},
			Static:  st,
			Allow:   []string{},
			Deny:    []string{},
		}},
	}
	l := defaultListener(listen)
	l.Sites = []string{site.Name}
	l.DefaultSite = site.Name
	l.Redirects = []string{}
	return &Config{
		Server:    defaultServer(),
		Listeners: []*Listener{l},
		Telemetry: defaultTelemetry(),
		Sites:     []*Site{site},
	}
}
