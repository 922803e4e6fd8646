package httpwasm

import (
	"log/slog"
	"testing"
)

func TestSplitLogfmt(t *testing.T) {
	tests := []struct {
		line, msg string
		attrs     []slog.Attr
	}{
		{"plain message", "plain message", nil},
		{"denied path=/admin/x", "denied", []slog.Attr{slog.String("path", "/admin/x")}},
		{`denied path=/admin/x reason="no token"`, "denied", []slog.Attr{slog.String("path", "/admin/x"), slog.String("reason", "no token")}},
		{`m a="" b="q\"uote\\" c="line\nfeed\x00"`, "m", []slog.Attr{slog.String("a", ""), slog.String("b", `q"uote\`), slog.String("c", "line\nfeed\x00")}},
		{"a=b", "a=b", nil},                             // no message before the pair: left whole
		{"x = y", "x = y", nil},                         // not a pair
		{`m k="unterminated`, `m k="unterminated`, nil}, // not a pair
		{`m k="bad\q"`, `m k="bad\q"`, nil},             // unknown escape
		{"m 1+1=2 is math", "m 1+1=2 is math", nil},     // does not end in pairs
		{"ratio 1+1=2", "ratio", []slog.Attr{slog.String("1+1", "2")}},
	}
	for _, tt := range tests {
		msg, attrs := splitLogfmt(tt.line)
		if msg != tt.msg || len(attrs) != len(tt.attrs) {
			t.Errorf("%q: %q %v, want %q %v", tt.line, msg, attrs, tt.msg, tt.attrs)
			continue
		}
		for i := range attrs {
			if !attrs[i].Equal(tt.attrs[i]) {
				t.Errorf("%q: attr %d %v, want %v", tt.line, i, attrs[i], tt.attrs[i])
			}
		}
	}
}

func FuzzSplitLogfmt(f *testing.F) {
	f.Add(`denied path=/admin/x reason="no token"`)
	f.Add(`m a="\x00\n" b=c`)
	f.Fuzz(func(t *testing.T, line string) {
		msg, attrs := splitLogfmt(line)
		if len(attrs) == 0 && msg != line {
			t.Fatalf("%q: message changed without fields: %q", line, msg)
		}
		if len(attrs) > maxLogFields {
			t.Fatalf("%q: %d fields", line, len(attrs))
		}
	})
}
