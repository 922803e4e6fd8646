package guestlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := New(slog.New(slog.NewTextHandler(&out, nil)), slog.LevelInfo, "stdout")
	w.Write([]byte("one\r\ntw"))
	w.Write([]byte("o\nthree"))
	got := out.String()
	if !strings.Contains(got, "msg=one source=stdout") || !strings.Contains(got, "msg=two source=stdout") || strings.Contains(got, "three") {
		t.Errorf("log:\n%s", got)
	}
	w.Write([]byte(strings.Repeat("x", maxLine)))
	if !strings.Contains(out.String(), "three"+strings.Repeat("x", 10)) {
		t.Error("long line not cut and logged")
	}
}

// TestRecorder: records are held while an instance starts; Release logs
// those the next handler keeps, Fail returns them all, unlogged, and
// after either, records go straight through.
func TestRecorder(t *testing.T) {
	for _, fail := range []bool{false, true} {
		var out bytes.Buffer
		r := NewRecorder(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError}))
		log := slog.New(r)
		w := New(log, slog.LevelWarn, "stderr")
		w.Write([]byte("panic: boom\n"))
		log.Info("chatty")
		log.Error("setup: bad")
		if out.Len() != 0 {
			t.Fatalf("logged while holding:\n%s", out.String())
		}
		var held []slog.Record
		if fail {
			held = r.Fail()
		} else {
			r.Release()
		}
		log.Error("after")
		got := out.String()
		switch {
		case fail && (len(held) != 2 || held[0].Message != "panic: boom" || held[1].Message != "setup: bad"):
			t.Errorf("Fail returned %v; want the warning and the error (info is below the level)", held)
		case fail && (strings.Contains(got, "boom") || strings.Contains(got, "bad")):
			t.Errorf("Fail logged them:\n%s", got)
		case !fail && (strings.Contains(got, "boom") || !strings.Contains(got, "setup: bad")):
			t.Errorf("Release logged, at level error:\n%s", got)
		case !strings.Contains(got, "msg=after"):
			t.Errorf("not passed through after holding:\n%s", got)
		}
	}
}
