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
