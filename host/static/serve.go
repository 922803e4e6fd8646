package static

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/host/exchange"
)

// Header values used on every response; never modified.
var (
	valNosniff        = []byte("nosniff")
	valBytes          = []byte("bytes")
	valAcceptEncoding = []byte("Accept-Encoding")
	valNoCache        = []byte("no-cache")
)

// noBody is the producer for HEAD responses sent with Stream: the
// adapters write the headers, Content-Length included, and never call it.
var noBody = func(exchange.StreamWriter) error { return nil }

// serveFile answers with the file of e, with status (200, or an error
// page's status). It negotiates the content coding, evaluates conditional
// requests and ranges (for 200 only), and sends the cached bytes or the
// file. tries bounds the rebuilds when the file changes under it.
func (h *Handler) serveFile(x exchange.Exchange, e *entry, head bool, status, tries int) error {
	return h.serveWith(x, e, head, status, tries, nil)
}

// serveWith is serveFile with the file of e possibly already open (pre),
// as when e was just built from it: then that descriptor is sent, so the
// body always matches the headers even while the path keeps changing.
func (h *Handler) serveWith(x exchange.Exchange, e *entry, head bool, status, tries int, pre *os.File) error {
	if pre != nil {
		defer func() {
			if pre != nil {
				pre.Close()
			}
		}()
	}
	ok := status == http.StatusOK
	var rangeHdr []byte
	if ok && !head {
		rangeHdr = x.RequestHeader("Range")
	}
	// Ranges apply to the identity representation only: with a Range
	// header, the file is sent as it is.
	var v *variant
	if len(e.cands) > 0 && rangeHdr == nil {
		if ae := x.RequestHeader("Accept-Encoding"); len(ae) > 0 {
			a := parseAcceptEncoding(ae)
			if i := a.choose(e.cands); i >= 0 {
				v = h.variant(e, int(e.cands[i]))
			}
		}
	}
	etag := e.etag
	if v != nil {
		etag = v.etag
	}
	if ok {
		switch precondition(x, etag, e.lastMod, e.modSec) {
		case http.StatusNotModified:
			h.validatorHeaders(x, e, etag)
			x.SetStatus(http.StatusNotModified)
			return nil
		case http.StatusPreconditionFailed:
			return h.fail(x, http.StatusPreconditionFailed, head)
		}
		h.validatorHeaders(x, e, etag)
		x.SetResponseHeaderBytes("Accept-Ranges", valBytes)
	} else {
		x.SetStatus(status)
		x.SetResponseHeaderBytes("Cache-Control", valNoCache)
		if len(e.cands) > 0 {
			x.SetResponseHeaderBytes("Vary", valAcceptEncoding)
		}
	}
	x.SetResponseHeaderBytes("Content-Type", e.ctype)
	x.SetResponseHeaderBytes("X-Content-Type-Options", valNosniff)

	var err error
	switch {
	case v != nil:
		x.SetResponseHeaderBytes("Content-Encoding", v.encName)
		err = h.sendVariant(x, e, v, head)
	case rangeHdr != nil:
		var done bool
		if done, err = h.serveRange(x, e, rangeHdr, &pre); !done {
			err = h.sendWhole(x, e, head, &pre)
		}
	default:
		err = h.sendWhole(x, e, head, &pre)
	}
	if errors.Is(err, errChanged) {
		x.DelResponseHeader("Content-Encoding")
		x.DelResponseHeader("Content-Range")
		return h.retry(x, e, head, status, tries)
	}
	return err
}

// retry drops a stale entry and serves the file again from disk.
func (h *Handler) retry(x exchange.Exchange, e *entry, head bool, status, tries int) error {
	h.cache.remove(e)
	if tries <= 0 {
		return &exchange.Error{Status: http.StatusServiceUnavailable, Message: "file is changing", Err: errChanged}
	}
	p := h.prepare(e.key)
	f, err := h.root().Open(relName(e.key))
	var e2 *entry
	if err == nil {
		if e2, err = h.build(e.key, f, p); err != nil {
			f.Close()
		}
	}
	if err != nil {
		if status != http.StatusOK {
			return &exchange.Error{Status: status, Message: strings.ToLower(http.StatusText(status))}
		}
		return h.missing(x, head, err)
	}
	x.DelResponseHeader("Content-Encoding")
	return h.serveWith(x, e2, head, status, tries-1, f)
}

// validatorHeaders sets what both 200 and 304 carry (RFC 9110 §15.4.5).
func (h *Handler) validatorHeaders(x exchange.Exchange, e *entry, etag []byte) {
	x.SetResponseHeaderBytes("ETag", etag)
	x.SetResponseHeaderBytes("Last-Modified", e.lastMod)
	if e.cacheControl != nil {
		x.SetResponseHeaderBytes("Cache-Control", e.cacheControl)
	}
	if len(e.cands) > 0 {
		x.SetResponseHeaderBytes("Vary", valAcceptEncoding)
	}
}

// sendWhole sends the whole identity body.
func (h *Handler) sendWhole(x exchange.Exchange, e *entry, head bool, pre **os.File) error {
	if !head && *pre == nil && e.body == nil && h.sendShared(x, e, 0, e.id.Size) {
		return nil
	}
	switch {
	case e.body != nil:
		x.SetBody(e.body)
	case head:
		x.Stream(e.id.Size, noBody)
	default:
		f, err := h.takeFile(e, pre)
		if err != nil {
			return err
		}
		x.SendFile(f, 0, e.id.Size)
	}
	return nil
}

// sendVariant sends a content-coded body: cached bytes, a precompressed
// sidecar with sendfile, or the file compressed while it streams.
func (h *Handler) sendVariant(x exchange.Exchange, e *entry, v *variant, head bool) error {
	switch {
	case v.body != nil:
		x.SetBody(v.body)
	case head:
		x.Stream(v.size, noBody)
	case v.rel != nil:
		f, err := h.openChecked(v.rel, v.id)
		if err != nil {
			return err
		}
		x.SendFile(f, 0, v.size)
	default:
		rel, id, enc := e.rel, e.id, v.enc
		x.Stream(-1, func(w exchange.StreamWriter) error {
			// The file is opened here, not before: the adapter may never
			// run this (a filter can replace the body), and then nothing
			// leaks.
			f, err := h.openChecked(rel, id)
			if err != nil {
				return err
			}
			defer f.Close()
			return compressStream(enc, w, f)
		})
	}
	return nil
}

// serveRange answers a Range request on the identity body. done is false
// when the Range header is to be ignored (If-Range no longer matching,
// bad syntax, too many ranges): then the whole body is sent with 200.
func (h *Handler) serveRange(x exchange.Exchange, e *entry, spec []byte, pre **os.File) (done bool, err error) {
	if ir := x.RequestHeader("If-Range"); ir != nil && !ifRange(ir, e.etag, e.lastMod, e.modSec) {
		return false, nil
	}
	var rs [maxRanges]byteRange
	n, st := parseRange(spec, e.id.Size, &rs)
	size := e.id.Size
	switch st {
	case rangeIgnore:
		return false, nil
	case rangeUnsatisfiable:
		x.SetResponseHeader("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		return true, h.fail(x, http.StatusRequestedRangeNotSatisfiable, false)
	}
	if n == 1 {
		r := rs[0]
		var cr [64]byte
		b := append(cr[:0], "bytes "...)
		b = strconv.AppendInt(b, r.start, 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, r.end, 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, size, 10)
		if e.body == nil && *pre == nil && h.sendShared(x, e, r.start, r.length()) {
			x.SetResponseHeaderBytes("Content-Range", b)
			x.SetStatus(http.StatusPartialContent)
			return true, nil
		}
		if e.body == nil {
			f, err := h.takeFile(e, pre)
			if err != nil {
				return true, err
			}
			x.SetResponseHeaderBytes("Content-Range", b)
			x.SetStatus(http.StatusPartialContent)
			x.SendFile(f, r.start, r.length())
			return true, nil
		}
		x.SetResponseHeaderBytes("Content-Range", b)
		x.SetStatus(http.StatusPartialContent)
		x.SetBody(e.body[r.start : r.end+1])
		return true, nil
	}
	return true, h.sendMultipart(x, e, rs[:n])
}

// takeFile returns the descriptor already open for e, or opens and
// checks one.
func (h *Handler) takeFile(e *entry, pre **os.File) (*os.File, error) {
	if f := *pre; f != nil {
		*pre = nil
		return f, nil
	}
	return h.openChecked(e.rel, e.id)
}

// sendMultipart sends several ranges as multipart/byteranges (RFC 9110
// §14.6), with an exact Content-Length.
func (h *Handler) sendMultipart(x exchange.Exchange, e *entry, rs []byteRange) error {
	boundary := fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
	heads := make([]string, len(rs))
	total := int64(0)
	for i, r := range rs {
		heads[i] = fmt.Sprintf("--%s\r\nContent-Type: %s\r\nContent-Range: bytes %d-%d/%d\r\n\r\n",
			boundary, e.ctype, r.start, r.end, e.id.Size)
		total += int64(len(heads[i])) + r.length() + 2
	}
	tail := "--" + boundary + "--\r\n"
	total += int64(len(tail))
	x.SetResponseHeader("Content-Type", "multipart/byteranges; boundary="+boundary)
	x.SetStatus(http.StatusPartialContent)
	if e.body != nil {
		body := make([]byte, 0, total)
		for i, r := range rs {
			body = append(body, heads[i]...)
			body = append(body, e.body[r.start:r.end+1]...)
			body = append(body, "\r\n"...)
		}
		x.SetBody(append(body, tail...))
		return nil
	}
	rel, id := e.rel, e.id
	x.Stream(total, func(w exchange.StreamWriter) error {
		f, err := h.openChecked(rel, id)
		if err != nil {
			return err
		}
		defer f.Close()
		for i, r := range rs {
			if _, err := io.WriteString(w, heads[i]); err != nil {
				return err
			}
			if _, err := io.Copy(w, io.NewSectionReader(f, r.start, r.length())); err != nil {
				return err
			}
			if _, err := io.WriteString(w, "\r\n"); err != nil {
				return err
			}
		}
		_, err = io.WriteString(w, tail)
		return err
	})
	return nil
}

// variant returns the form of e in coding enc, compressing and caching
// it on first use; nil means send identity (compressing did not help).
func (h *Handler) variant(e *entry, enc int) *variant {
	if v := e.sidecar[enc]; v != nil {
		return v
	}
	if v := e.dyn[enc].Load(); v != nil {
		if v.noGain {
			return nil
		}
		return v
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if v := e.dyn[enc].Load(); v != nil {
		if v.noGain {
			return nil
		}
		return v
	}
	v := &variant{enc: enc, size: -1, etag: makeETag(e.id.Size, e.id.Mtime, encodings[enc].name),
		encName: []byte(encodings[enc].name)}
	if e.body != nil {
		v.body = compressBytes(enc, e.body)
		v.size = int64(len(v.body))
		if len(v.body) >= len(e.body) {
			v.body, v.noGain = nil, true
		}
	}
	e.dyn[enc].Store(v)
	if v.body != nil {
		h.cache.grow(e, int64(len(v.body)))
	}
	if v.noGain {
		return nil
	}
	return v
}
