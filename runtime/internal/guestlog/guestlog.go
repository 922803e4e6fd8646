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

// Recorder is a slog.Handler that holds a guest's records while its
// instance starts. When the start succeeds, Release passes them on and
// later records go straight through; when it fails, Fail returns them and
// they are never logged, so that a failed start is reported once, as one
// error, not as log lines per instance before it.
type Recorder struct {
	next    slog.Handler
	mu      sync.Mutex
	holding bool
	held    []slog.Record
}

// NewRecorder returns a Recorder holding records for next.
func NewRecorder(next slog.Handler) *Recorder {
	return &Recorder{next: next, holding: true}
}

// Enabled implements slog.Handler. While holding, warnings and errors are
// always kept, whatever the level of next: they may explain a failure.
func (r *Recorder) Enabled(ctx context.Context, l slog.Level) bool {
	r.mu.Lock()
	holding := r.holding
	r.mu.Unlock()
	return holding && l >= slog.LevelWarn || r.next.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (r *Recorder) Handle(ctx context.Context, rec slog.Record) error {
	r.mu.Lock()
	if r.holding {
		r.held = append(r.held, rec.Clone())
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	return r.next.Handle(ctx, rec)
}

// WithAttrs implements slog.Handler. The derived handler does not hold:
// the runtime logs through a Recorder without deriving one.
func (r *Recorder) WithAttrs(as []slog.Attr) slog.Handler { return r.next.WithAttrs(as) }

// WithGroup implements slog.Handler, as WithAttrs does.
func (r *Recorder) WithGroup(name string) slog.Handler { return r.next.WithGroup(name) }

// Release passes the held records on, those next keeps, and stops holding.
func (r *Recorder) Release() {
	r.mu.Lock()
	held := r.held
	r.held, r.holding = nil, false
	r.mu.Unlock()
	for _, rec := range held {
		if r.next.Enabled(context.Background(), rec.Level) {
			_ = r.next.Handle(context.Background(), rec)
		}
	}
}

// Fail stops holding and returns the held records, which are not logged.
func (r *Recorder) Fail() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	held := r.held
	r.held, r.holding = nil, false
	return held
}
