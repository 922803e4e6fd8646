//go:build wasip1

package abi

import (
	"runtime"
	"strings"
	"unsafe"
)

func init() { Current = wasmHost{} }

//go:wasmimport http_handler enable_features
func enableFeatures(features uint32) uint32

//go:wasmimport http_handler get_config
func getConfig(buf, limit uint32) uint32

//go:wasmimport http_handler log_enabled
func logEnabled(level int32) uint32

//go:wasmimport http_handler log
func logMessage(level int32, msg, msgLen uint32)

//go:wasmimport http_handler get_method
func getMethod(buf, limit uint32) uint32

//go:wasmimport http_handler set_method
func setMethod(ptr, n uint32)

//go:wasmimport http_handler get_uri
func getURI(buf, limit uint32) uint32

//go:wasmimport http_handler set_uri
func setURI(ptr, n uint32)

//go:wasmimport http_handler get_protocol_version
func getProtocolVersion(buf, limit uint32) uint32

//go:wasmimport http_handler get_source_addr
func getSourceAddr(buf, limit uint32) uint32

//go:wasmimport http_handler get_header_names
func getHeaderNames(kind, buf, limit uint32) uint64

//go:wasmimport http_handler get_header_values
func getHeaderValues(kind, name, nameLen, buf, limit uint32) uint64

//go:wasmimport http_handler set_header_value
func setHeaderValue(kind, name, nameLen, value, valueLen uint32)

//go:wasmimport http_handler add_header_value
func addHeaderValue(kind, name, nameLen, value, valueLen uint32)

//go:wasmimport http_handler remove_header
func removeHeader(kind, name, nameLen uint32)

//go:wasmimport http_handler read_body
func readBody(kind, buf, limit uint32) uint64

//go:wasmimport http_handler write_body
func writeBody(kind, body, bodyLen uint32)

//go:wasmimport http_handler get_status_code
func getStatusCode() uint32

//go:wasmimport http_handler set_status_code
func setStatusCode(code uint32)

// buf receives every variable-length result; it grows to the largest
// seen, so steady state allocates only the returned string.
var buf = make([]byte, 2048)

func ptr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func sptr(s string) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s)))) }

// get calls a buf/buf_limit function, retrying once with a buffer of the
// length it asked for.
func get(fn func(buf, limit uint32) uint32) []byte {
	n := fn(ptr(buf), uint32(len(buf)))
	if n > uint32(len(buf)) {
		buf = make([]byte, n)
		n = fn(ptr(buf), n)
	}
	return buf[:n]
}

// list calls a function returning count<<32|len of NUL-terminated strings.
func list(fn func(buf, limit uint32) uint64) []string {
	cl := fn(ptr(buf), uint32(len(buf)))
	if cl == 0 {
		return nil
	}
	if n := uint32(cl); n > uint32(len(buf)) {
		buf = make([]byte, n)
		cl = fn(ptr(buf), n)
	}
	count, n := int(cl>>32), uint32(cl)
	out := make([]string, 0, count)
	s := string(buf[:n])
	for len(s) > 0 {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			i = len(s)
		}
		out = append(out, s[:i])
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}

type wasmHost struct{}

func (wasmHost) EnableFeatures(f uint32) uint32 { return enableFeatures(f) }
func (wasmHost) GetConfig() []byte {
	return append([]byte(nil), get(getConfig)...)
}
func (wasmHost) LogEnabled(level int32) bool { return logEnabled(level) == 1 }
func (wasmHost) Log(level int32, msg string) {
	logMessage(level, sptr(msg), uint32(len(msg)))
	runtime.KeepAlive(msg)
}
func (wasmHost) GetMethod() string { return string(get(getMethod)) }
func (wasmHost) SetMethod(m string) {
	setMethod(sptr(m), uint32(len(m)))
	runtime.KeepAlive(m)
}
func (wasmHost) GetURI() string { return string(get(getURI)) }
func (wasmHost) SetURI(u string) {
	setURI(sptr(u), uint32(len(u)))
	runtime.KeepAlive(u)
}
func (wasmHost) GetProtocolVersion() string { return string(get(getProtocolVersion)) }
func (wasmHost) GetSourceAddr() string      { return string(get(getSourceAddr)) }
func (wasmHost) GetHeaderNames(kind uint32) []string {
	return list(func(b, l uint32) uint64 { return getHeaderNames(kind, b, l) })
}
func (wasmHost) GetHeaderValues(kind uint32, name string) []string {
	v := list(func(b, l uint32) uint64 { return getHeaderValues(kind, sptr(name), uint32(len(name)), b, l) })
	runtime.KeepAlive(name)
	return v
}
func (wasmHost) SetHeaderValue(kind uint32, name, value string) {
	setHeaderValue(kind, sptr(name), uint32(len(name)), sptr(value), uint32(len(value)))
	runtime.KeepAlive(name)
	runtime.KeepAlive(value)
}
func (wasmHost) AddHeaderValue(kind uint32, name, value string) {
	addHeaderValue(kind, sptr(name), uint32(len(name)), sptr(value), uint32(len(value)))
	runtime.KeepAlive(name)
	runtime.KeepAlive(value)
}
func (wasmHost) RemoveHeader(kind uint32, name string) {
	removeHeader(kind, sptr(name), uint32(len(name)))
	runtime.KeepAlive(name)
}
func (wasmHost) ReadBody(kind uint32, p []byte) (int, bool) {
	if len(p) == 0 {
		return 0, false
	}
	r := readBody(kind, ptr(p), uint32(len(p)))
	runtime.KeepAlive(p)
	return int(uint32(r)), r>>32 == 1
}
func (wasmHost) WriteBody(kind uint32, p []byte) {
	writeBody(kind, ptr(p), uint32(len(p)))
	runtime.KeepAlive(p)
}
func (wasmHost) GetStatusCode() uint32     { return getStatusCode() }
func (wasmHost) SetStatusCode(code uint32) { setStatusCode(code) }
