package static

import (
	"bytes"
	"io"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Levels: a cached variant is compressed once and sent many times, so it
// gets a high level; a streamed one costs CPU on every request, so it
// gets a fast one.
const (
	cachedBrotliLevel = 9
	cachedGzipLevel   = gzip.BestCompression
	streamBrotliLevel = 4
	streamGzipLevel   = 5
)

var (
	zstdOnce     sync.Once
	zstdBest     *zstd.Encoder // EncodeAll is safe for concurrent use
	zstdStreamPl = sync.Pool{New: func() any {
		w, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
		return w
	}}
	gzipStreamPl   = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, streamGzipLevel); return w }}
	brotliStreamPl = sync.Pool{New: func() any { return brotli.NewWriterLevel(nil, streamBrotliLevel) }}
)

// compressBytes compresses a whole small file for the cache.
func compressBytes(enc int, src []byte) []byte {
	switch enc {
	case encZstd:
		zstdOnce.Do(func() {
			zstdBest, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
		})
		return zstdBest.EncodeAll(src, make([]byte, 0, len(src)/2))
	case encBr:
		var b bytes.Buffer
		w := brotli.NewWriterLevel(&b, cachedBrotliLevel)
		w.Write(src)
		w.Close()
		return b.Bytes()
	default:
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, cachedGzipLevel)
		w.Write(src)
		w.Close()
		return b.Bytes()
	}
}

// compressStream copies r to w through an encoder for enc.
func compressStream(enc int, w io.Writer, r io.Reader) error {
	var cw io.WriteCloser
	switch enc {
	case encZstd:
		z := zstdStreamPl.Get().(*zstd.Encoder)
		z.Reset(w)
		defer zstdStreamPl.Put(z)
		cw = z
	case encBr:
		b := brotliStreamPl.Get().(*brotli.Writer)
		b.Reset(w)
		defer brotliStreamPl.Put(b)
		cw = b
	default:
		g := gzipStreamPl.Get().(*gzip.Writer)
		g.Reset(w)
		defer gzipStreamPl.Put(g)
		cw = g
	}
	if _, err := io.Copy(cw, r); err != nil {
		cw.Close()
		return err
	}
	return cw.Close()
}
