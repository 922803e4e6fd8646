package observe

import (
	"crypto/tls"
	"fmt"
	"strconv"
)

// A field is one named value of an access log line. The set is closed
// (FieldNames) so that a config is checked when it loads and a line is
// formatted by a switch, not by a template interpreted per request.
type field uint8

const (
	fieldTime field = iota
	fieldRemoteAddr
	fieldMethod
	fieldURI
	fieldProto
	fieldStatus
	fieldBytes
	fieldDuration
	fieldHost
	fieldUserAgent
	fieldReferer
	fieldSite
	fieldRoute
	fieldTraceID
	fieldSpanID
	fieldRequestID
	fieldConsumer
	fieldUpstreamAddr
	fieldUpstreamStatus
	fieldUpstreamDuration
	fieldTLSVersion
	fieldTLSCipher
	fieldTLSServerName
	numFields
)

var fieldNames = [numFields]string{
	"time", "remote_addr", "method", "uri", "proto", "status", "bytes", "duration",
	"host", "user_agent", "referer", "site", "route", "trace_id", "span_id",
	"request_id", "consumer", "upstream_addr", "upstream_status", "upstream_duration",
	"tls_version", "tls_cipher", "tls_server_name",
}

// FieldNames returns the names an access log's Fields may list, in the
// order of the documented set (config checks a config against its own
// copy; a test in host compares the two).
func FieldNames() []string { return append([]string(nil), fieldNames[:]...) }

// The formats' fields when none are configured: the lines sluice has
// always written.
var (
	defaultJSONFields = []field{fieldTime, fieldRemoteAddr, fieldMethod, fieldURI, fieldProto, fieldStatus,
		fieldBytes, fieldDuration, fieldHost, fieldUserAgent, fieldReferer, fieldSite, fieldRoute,
		fieldTraceID, fieldSpanID}
	defaultCLFFields = []field{fieldHost, fieldSite, fieldRoute, fieldDuration, fieldTraceID, fieldSpanID}
)

// What a line's fields need the wrapper to gather, beyond what every
// line has; a request pays only for what its log prints.
const (
	needRequestID = 1 << iota
	needConsumer
	needUpstream
	needTLS
)

func parseFields(names []string) ([]field, uint8, error) {
	fs := make([]field, 0, len(names))
	var needs uint8
	seen := [numFields]bool{}
	for _, n := range names {
		f := field(0)
		for f < numFields && fieldNames[f] != n {
			f++
		}
		if f == numFields {
			return nil, 0, fmt.Errorf("access log: field %q: not one of %v", n, fieldNames)
		}
		if seen[f] {
			return nil, 0, fmt.Errorf("access log: field %q listed twice", n)
		}
		seen[f] = true
		fs = append(fs, f)
		switch f {
		case fieldRequestID:
			needs |= needRequestID
		case fieldConsumer:
			needs |= needConsumer
		case fieldUpstreamAddr, fieldUpstreamStatus, fieldUpstreamDuration:
			needs |= needUpstream
		case fieldTLSVersion, fieldTLSCipher, fieldTLSServerName:
			needs |= needTLS
		}
	}
	return fs, needs, nil
}

// present reports whether e has a value for f. JSON leaves out a field
// without one (as it always left out trace_id on untraced requests);
// CLF writes "-".
func (e *Entry) present(f field) bool {
	switch f {
	case fieldTraceID:
		return e.TraceID.IsValid()
	case fieldSpanID:
		return e.SpanID.IsValid()
	case fieldRequestID:
		return len(e.RequestID) > 0
	case fieldConsumer:
		return len(e.Consumer) > 0
	case fieldUpstreamAddr, fieldUpstreamStatus, fieldUpstreamDuration:
		return e.UpstreamAddr != ""
	case fieldTLSVersion, fieldTLSCipher:
		return e.TLS != nil
	case fieldTLSServerName:
		return e.TLS != nil && e.TLS.ServerName != ""
	}
	return true
}

// jsonKeys are the fields' `"name":`, appended at once.
var jsonKeys = func() (k [numFields]string) {
	for f, n := range fieldNames {
		k[f] = `"` + n + `":`
	}
	return k
}()

// appendJSONFields appends e as a JSON object of fs and a newline.
func appendJSONFields(b []byte, e *Entry, fs []field) []byte {
	b = append(b, '{')
	first := true
	for _, f := range fs {
		if f >= fieldTraceID && !e.present(f) { // the others always are
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, jsonKeys[f]...)
		b = appendJSONValue(b, e, f)
	}
	return append(b, "}\n"...)
}

func appendJSONValue(b []byte, e *Entry, f field) []byte {
	switch f {
	case fieldTime:
		b = append(b, '"')
		b = appendTime(b, e.Time, false)
		return append(b, '"')
	case fieldRemoteAddr:
		b = append(b, '"')
		b = appendAddr(b, e.Remote, true)
		return append(b, '"')
	case fieldMethod:
		return appendJSONString(b, e.Method)
	case fieldURI:
		return appendJSONString(b, e.URI)
	case fieldProto:
		return appendJSONString(b, e.Proto)
	case fieldStatus:
		return strconv.AppendInt(b, int64(e.Status), 10)
	case fieldBytes:
		return strconv.AppendInt(b, e.Bytes, 10)
	case fieldDuration:
		return strconv.AppendFloat(b, e.Duration.Seconds(), 'f', -1, 64)
	case fieldHost:
		return appendJSONString(b, e.Host)
	case fieldUserAgent:
		return appendJSONString(b, e.UserAgent)
	case fieldReferer:
		return appendJSONString(b, e.Referer)
	case fieldSite:
		return appendJSONString(b, e.Site)
	case fieldRoute:
		return appendJSONString(b, e.Route)
	case fieldUpstreamStatus:
		return strconv.AppendInt(b, int64(e.UpstreamStatus), 10)
	case fieldUpstreamDuration:
		return strconv.AppendFloat(b, e.UpstreamDuration.Seconds(), 'f', -1, 64)
	case fieldTraceID, fieldSpanID:
		b = append(b, '"')
		b = appendIDs(b, e, f)
		return append(b, '"')
	}
	if v, ok := e.bytesOf(f); ok {
		return appendJSONString(b, v)
	}
	return appendJSONString(b, e.str(f))
}

// bytesOf is the value of a field that holds request bytes (the client's,
// or a filter's); ok is false for the other textual fields (str).
func (e *Entry) bytesOf(f field) (v []byte, ok bool) {
	switch f {
	case fieldMethod:
		return e.Method, true
	case fieldURI:
		return e.URI, true
	case fieldHost:
		return e.Host, true
	case fieldUserAgent:
		return e.UserAgent, true
	case fieldReferer:
		return e.Referer, true
	case fieldRequestID:
		return e.RequestID, true
	case fieldConsumer:
		return e.Consumer, true
	}
	return nil, false
}

// str is the value of a textual field held as a string: the config's
// (site, route, upstream), the engine's (proto) or the TLS handshake's
// (the server name is the client's: escaped like the rest).
func (e *Entry) str(f field) string {
	switch f {
	case fieldProto:
		return e.Proto
	case fieldSite:
		return e.Site
	case fieldRoute:
		return e.Route
	case fieldUpstreamAddr:
		return e.UpstreamAddr
	case fieldTLSVersion:
		return tlsVersionName(e.TLS.Version)
	case fieldTLSCipher:
		return tls.CipherSuiteName(e.TLS.CipherSuite)
	case fieldTLSServerName:
		return e.TLS.ServerName
	}
	return ""
}

// tlsVersionName is tls.VersionName without its "TLS " prefix's space,
// so that a CLF value needs no quotes: "TLSv1.3", as nginx's
// $ssl_protocol.
func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS13:
		return "TLSv1.3"
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS11:
		return "TLSv1.1"
	case tls.VersionTLS10:
		return "TLSv1"
	}
	return "unknown"
}

func appendIDs(b []byte, e *Entry, f field) []byte {
	if f == fieldTraceID {
		return appendHex(b, e.TraceID[:])
	}
	return appendHex(b, e.SpanID[:])
}

// clfKeys are the fields' ` name=`, appended at once.
var clfKeys = func() (k [numFields]string) {
	for f, n := range fieldNames {
		k[f] = " " + n + "="
	}
	return k
}()

// appendCLFFields appends fs as ` name=value` pairs: numbers and ids
// bare, text quoted and escaped, "-" for a missing value.
func appendCLFFields(b []byte, e *Entry, fs []field) []byte {
	for _, f := range fs {
		b = append(b, clfKeys[f]...)
		if f >= fieldTraceID && !e.present(f) { // the others always are
			if f == fieldUpstreamStatus || f == fieldUpstreamDuration || f == fieldTraceID || f == fieldSpanID {
				b = append(b, '-') // a number's place
			} else {
				b = append(b, `"-"`...)
			}
			continue
		}
		switch f {
		case fieldTime:
			b = append(b, '[')
			b = appendTime(b, e.Time, true)
			b = append(b, ']')
		case fieldStatus:
			b = strconv.AppendInt(b, int64(e.Status), 10)
		case fieldBytes:
			b = strconv.AppendInt(b, e.Bytes, 10)
		case fieldDuration:
			b = strconv.AppendFloat(b, e.Duration.Seconds(), 'f', 6, 64)
		case fieldUpstreamStatus:
			b = strconv.AppendInt(b, int64(e.UpstreamStatus), 10)
		case fieldUpstreamDuration:
			b = strconv.AppendFloat(b, e.UpstreamDuration.Seconds(), 'f', 6, 64)
		case fieldTraceID, fieldSpanID:
			b = appendIDs(b, e, f)
		case fieldRemoteAddr:
			b = append(b, '"')
			b = appendAddr(b, e.Remote, true) // escaped there
			b = append(b, '"')
		case fieldSite:
			b = append(b, '"')
			b = appendCLFEscaped(b, e.Site)
			b = append(b, '"')
		case fieldRoute:
			b = append(b, '"')
			b = appendCLFEscaped(b, e.Route)
			b = append(b, '"')
		case fieldHost:
			b = append(b, '"')
			b = appendCLFOrDash(b, e.Host)
			b = append(b, '"')
		default:
			b = append(b, '"')
			if v, ok := e.bytesOf(f); ok {
				b = appendCLFOrDash(b, v)
			} else {
				b = appendCLFEscaped(b, e.str(f))
			}
			b = append(b, '"')
		}
	}
	return b
}
