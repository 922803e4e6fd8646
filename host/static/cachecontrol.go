package static

import (
	"path"
	"strings"
)

// CacheControl chooses the Cache-Control header of each file. An empty
// field takes its default.
type CacheControl struct {
	// HTML is sent for text/html, so that a deploy is seen at the next
	// load; default "no-cache" (cache, but revalidate: a cheap 304).
	HTML string
	// Hashed is sent for files whose name carries a content hash, which
	// never change under the same name: a segment of at least 8 letters
	// and digits after the base name, mixing digits and letters or cases
	// ("app.3f9a1c2b.js", "index-DiwrgTda.js", "main.0a1b2c3d4e.css");
	// default "public, max-age=31536000, immutable".
	Hashed string
	// Default is sent for every other file; default "public, max-age=3600".
	Default string
	// Types maps a media type ("image/png") or a wildcard ("image/*") to
	// the value for it; it wins over HTML, Hashed and Default. An exact
	// type wins over a wildcard.
	Types map[string]string
	// Off sends no Cache-Control at all.
	Off bool
	// Exact takes HTML, Hashed and Default as they are, an empty one
	// sending no header, instead of filling empty ones with the defaults
	// (the HCL config does its own defaulting).
	Exact bool
}

const (
	defaultHTMLCache    = "no-cache"
	defaultHashedCache  = "public, max-age=31536000, immutable"
	defaultDefaultCache = "public, max-age=3600"
)

func (c *CacheControl) withDefaults() {
	if c.Exact {
		return
	}
	if c.HTML == "" {
		c.HTML = defaultHTMLCache
	}
	if c.Hashed == "" {
		c.Hashed = defaultHashedCache
	}
	if c.Default == "" {
		c.Default = defaultDefaultCache
	}
}

// value returns the Cache-Control for a file name with media type mt, or
// "" for none.
func (c *CacheControl) value(name, mt string) string {
	switch {
	case c.Off:
		return ""
	case c.Types != nil:
		if v, ok := c.Types[mt]; ok {
			return v
		}
		if i := strings.IndexByte(mt, '/'); i >= 0 {
			if v, ok := c.Types[mt[:i]+"/*"]; ok {
				return v
			}
		}
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return c.HTML
	case hashedName(path.Base(name)):
		return c.Hashed
	}
	return c.Default
}

// hashedName reports whether a file name looks like a build tool's
// content-hashed asset name: after the first token of the name (tokens
// split on '.', '-', '_', the extension left out), a token of at least 8
// ASCII letters and digits that mixes digits and letters or upper and
// lower case. Plain words ("bootstrap.min.js", "jquery-3.7.1.js") and dates
// ("report-20240101.pdf") do not qualify.
func hashedName(base string) bool {
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	first := true
	for len(base) > 0 {
		i := strings.IndexAny(base, ".-_")
		tok := base
		if i >= 0 {
			tok, base = base[:i], base[i+1:]
		} else {
			base = ""
		}
		if first {
			first = false
			continue
		}
		if len(tok) < 8 {
			continue
		}
		var digit, upper, lowerc, other bool
		for j := 0; j < len(tok); j++ {
			switch c := tok[j]; {
			case '0' <= c && c <= '9':
				digit = true
			case 'A' <= c && c <= 'Z':
				upper = true
			case 'a' <= c && c <= 'z':
				lowerc = true
			default:
				other = true
			}
		}
		if !other && ((digit && (upper || lowerc)) || (upper && lowerc)) {
			return true
		}
	}
	return false
}
