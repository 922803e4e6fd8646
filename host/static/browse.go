package static

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
)

// listItem is one row of a directory listing; its JSON form is the
// listing API.
type listItem struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
	IsDir   bool      `json:"is_dir"`
}

// list answers for a directory (cleaned name, with its trailing slash)
// with its listing: JSON when the client asks for application/json (or
// ?format=json), else HTML. Dotfiles are left out unless enabled.
func (h *Handler) list(x exchange.Exchange, name string, head bool) error {
	rel := relName(name)
	d, err := h.root().Open(rel)
	if err != nil {
		return h.fileError(x, head, err)
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return h.fileError(x, head, err)
	}
	items := make([]listItem, 0, len(ents))
	for _, de := range ents {
		n := de.Name()
		if !h.opts.Dotfiles && (strings.HasPrefix(n, ".") || hiddenTarget(h.root(), path.Join(rel, n))) {
			continue
		}
		// Stat through the root: symlinks are followed, but only inside it.
		fi, err := h.root().Stat(path.Join(rel, n))
		if err != nil {
			continue
		}
		if !fi.IsDir() && !fi.Mode().IsRegular() {
			continue
		}
		it := listItem{Name: n, ModTime: fi.ModTime().UTC().Truncate(time.Second), IsDir: fi.IsDir()}
		if !it.IsDir {
			it.Size = fi.Size()
		}
		items = append(items, it)
	}
	q, _ := url.ParseQuery(string(x.Query()))
	by, order := q.Get("sort"), q.Get("order")
	sortItems(items, by, order)

	x.SetResponseHeader("Vary", "Accept")
	x.SetResponseHeaderBytes("Cache-Control", valNoCache)
	x.SetResponseHeaderBytes("X-Content-Type-Options", valNosniff)
	var body []byte
	if wantsJSON(x.RequestHeader("Accept")) || q.Get("format") == "json" {
		x.SetResponseHeader("Content-Type", "application/json; charset=utf-8")
		body, _ = json.Marshal(items)
		body = append(body, '\n')
	} else {
		x.SetResponseHeader("Content-Type", "text/html; charset=utf-8")
		body = h.listHTML(name, items, by, order)
	}
	x.SetBody(body)
	return nil
}

// sortItems orders a listing: by name (default), size or time, ascending
// unless order is "desc"; directories first, names breaking ties.
func sortItems(items []listItem, by, order string) {
	desc := order == "desc"
	slices.SortStableFunc(items, func(a, b listItem) int {
		if a.IsDir != b.IsDir {
			if a.IsDir {
				return -1
			}
			return 1
		}
		c := 0
		switch by {
		case "size":
			c = cmpInt(a.Size, b.Size)
		case "time":
			c = a.ModTime.Compare(b.ModTime)
		}
		if c == 0 {
			c = strings.Compare(a.Name, b.Name)
		}
		if desc {
			c = -c
		}
		return c
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// wantsJSON reports whether an Accept header prefers JSON to HTML.
func wantsJSON(accept []byte) bool {
	return bytes.Contains(accept, []byte("application/json")) && !bytes.Contains(accept, []byte("text/html"))
}

func (h *Handler) listHTML(name string, items []listItem, by, order string) []byte {
	var b bytes.Buffer
	title := html.EscapeString(h.prefix + name)
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Index of %s</title>
<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:.2em 1em;text-align:left}td.n{text-align:right}th a{color:inherit}</style>
</head><body>
<h1>Index of %s</h1>
<table>
<thead><tr>`, title, title)
	for _, col := range []struct{ key, label string }{{"name", "Name"}, {"size", "Size"}, {"time", "Modified"}} {
		next, mark := "asc", ""
		if by == col.key || (by == "" && col.key == "name") {
			if order == "desc" {
				mark = " ↓"
			} else {
				next, mark = "desc", " ↑"
			}
		}
		fmt.Fprintf(&b, `<th><a href="?sort=%s&amp;order=%s">%s</a>%s</th>`, col.key, next, col.label, mark)
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	if name != "/" {
		b.WriteString(`<tr><td><a href="../">../</a></td><td></td><td></td></tr>` + "\n")
	}
	for _, it := range items {
		href, label, size := "./"+url.PathEscape(it.Name), it.Name, humanSize(it.Size)
		if it.IsDir {
			href, label, size = href+"/", label+"/", "—"
		}
		fmt.Fprintf(&b, "<tr><td><a href=\"%s\">%s</a></td><td class=\"n\">%s</td><td><time datetime=\"%s\">%s</time></td></tr>\n",
			html.EscapeString(href), html.EscapeString(label), size,
			it.ModTime.Format(time.RFC3339), it.ModTime.Format("2006-01-02 15:04:05"))
	}
	b.WriteString("</tbody></table>\n</body></html>\n")
	return b.Bytes()
}

// humanSize formats a byte count in binary units: "512 B", "3.4 KiB".
func humanSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n), 0
	for v >= 1024 && unit < 6 {
		v /= 1024
		unit++
	}
	return fmt.Sprintf("%.1f %ciB", v, "BKMGTPE"[unit])
}

// escapePath percent-encodes a cleaned path for a Location header.
func escapePath(p string) string {
	return (&url.URL{Path: p}).EscapedPath()
}
