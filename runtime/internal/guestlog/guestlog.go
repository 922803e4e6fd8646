// Package guestlog turns a guest's WASI stdout and stderr into log lines.
package guestlog

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// maxLine is where a line without a newline is cut and logged anyway.
const maxLine = 8 << 10

// Writer logs each line written to it at a level, with the stream name.
type Writer struct {
	mu     sync.Mutex
	log    *slog.Logger
	level  slog.Level
	stream string
	buf    []byte
}

// New returns a Writer logging to log at level; stream is "stdout" or
// "stderr".
func New(log *slog.Logger, level slog.Level, stream string) *Writer {
	return &Writer{log: log, level: level, stream: stream}
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.emit(w.buf)
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[:copy(w.buf, w.buf[i+1:])]
	}
}

func (w *Writer) emit(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	w.log.Log(context.Background(), w.level, string(line), "source", w.stream)
}
