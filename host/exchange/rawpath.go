package exchange

import "bytes"

// rawPaths is what SetRawPath records on an adapter.
type rawPaths struct {
	raw  []byte // the path as the client sent it
	path []byte // the path the request URI was set to
}

func (r *rawPaths) setRawPath(raw, path []byte) { r.raw, r.path = raw, path }
func (r *rawPaths) paths() *rawPaths            { return r }

type rawPather interface {
	setRawPath(raw, path []byte)
	paths() *rawPaths
}

// SetRawPath records, after x's request URI was rewritten to a canonical
// path, that raw (the path as the client sent it) may go upstream in its
// place while x.Path() is still path. Both are kept, not copied. It does
// nothing on an exchange that cannot keep them.
func SetRawPath(x Exchange, raw, path []byte) {
	if r, ok := x.(rawPather); ok {
		r.setRawPath(raw, path)
	}
}

// RawPath returns the path to forward upstream in place of x.Path(): the
// one SetRawPath recorded, as long as x.Path() is still the path it was
// set beside (a filter may have rewritten it since); else nil.
func RawPath(x Exchange) []byte {
	r, ok := x.(rawPather)
	if !ok {
		return nil
	}
	p := r.paths()
	if p.raw == nil || !bytes.Equal(x.Path(), p.path) {
		return nil
	}
	return p.raw
}
