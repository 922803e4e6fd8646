package h2

import (
	"encoding/binary"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Frames are written by appending to the connection's output buffer:
// no frame value, no copy through a framer's own buffer.

func appendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, stream uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(t), byte(flags),
		byte(stream>>24)&0x7f, byte(stream>>16), byte(stream>>8), byte(stream))
}

func appendSettings(b []byte, o *Options) []byte {
	n := 3
	if !o.NoConnectProtocol {
		n++
	}
	b = appendFrameHeader(b, n*6, http2.FrameSettings, 0, 0)
	b = appendSetting(b, http2.SettingMaxConcurrentStreams, o.MaxConcurrentStreams)
	b = appendSetting(b, http2.SettingInitialWindowSize, uint32(o.StreamWindow))
	b = appendSetting(b, http2.SettingMaxHeaderListSize, uint32(o.MaxHeaderBytes))
	if !o.NoConnectProtocol {
		b = appendSetting(b, http2.SettingEnableConnectProtocol, 1) // RFC 8441
	}
	return b
}

func appendSetting(b []byte, id http2.SettingID, v uint32) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(id))
	return binary.BigEndian.AppendUint32(b, v)
}

func appendWindowUpdate(b []byte, stream, inc uint32) []byte {
	if inc == 0 {
		return b
	}
	b = appendFrameHeader(b, 4, http2.FrameWindowUpdate, 0, stream)
	return binary.BigEndian.AppendUint32(b, inc&(1<<31-1))
}

func appendRST(b []byte, stream uint32, code http2.ErrCode) []byte {
	b = appendFrameHeader(b, 4, http2.FrameRSTStream, 0, stream)
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

func appendGoAway(b []byte, last uint32, code http2.ErrCode) []byte {
	b = appendFrameHeader(b, 8, http2.FrameGoAway, 0, 0)
	b = binary.BigEndian.AppendUint32(b, last&(1<<31-1))
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

func hf(name, value string) hpack.HeaderField { return hpack.HeaderField{Name: name, Value: value} }

var statusTexts = func() (t [600]string) {
	for i := 100; i < len(t); i++ {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

func statusText(code int) string {
	if code >= 100 && code < len(statusTexts) {
		return statusTexts[code]
	}
	return "500"
}

// dateCache is the Date field's value, formatted once a second.
type dateCache struct {
	unix int64
	text []byte
}

var dateNow atomic.Pointer[dateCache]

func date() []byte {
	now := time.Now()
	if d := dateNow.Load(); d != nil && d.unix == now.Unix() {
		return d.text
	}
	d := &dateCache{unix: now.Unix(), text: now.UTC().AppendFormat(nil, http.TimeFormat)}
	dateNow.Store(d)
	return d.text
}
