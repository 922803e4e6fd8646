package fsstat

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAtMatchesFile(t *testing.T) {
	if !Supported {
		t.Skip("no fstatat here")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := At(int(d.Fd()), []byte("f\x00"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := File(f)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a.Size != 3 || !a.Regular() || a.Dir() || a.Ino == 0 || a.Ctime == 0 {
		t.Errorf("At %+v, File %+v", a, b)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if c, _ := At(int(d.Fd()), []byte("f\x00")); c == a || c.Mtime != old.UnixNano() {
		t.Errorf("mtime change not seen: %+v", c)
	}
	if dd, err := At(int(d.Fd()), []byte(".\x00")); err != nil || !dd.Dir() {
		t.Errorf("dir: %+v %v", dd, err)
	}
	if _, err := At(int(d.Fd()), []byte("missing\x00")); err == nil {
		t.Error("missing file: no error")
	}
	if _, err := At(int(d.Fd()), []byte("f")); err == nil {
		t.Error("path without NUL accepted")
	}
	allocs := testing.AllocsPerRun(100, func() { At(int(d.Fd()), []byte("f\x00")) })
	if allocs != 0 {
		t.Errorf("At allocates %.1f times", allocs)
	}
}

// BenchmarkAt is the floor under the handler's fast path: the one system
// call it makes per request.
func BenchmarkAt(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	p := []byte("index.html\x00")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := At(int(d.Fd()), p); err != nil {
			b.Fatal(err)
		}
	}
}
