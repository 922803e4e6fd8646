package tlsconf_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/tlsconf"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

func sortedCerts(t *tlsconf.Table) []tlsconf.Certificate {
	cs := t.Certificates()
	sort.Slice(cs, func(i, j int) bool { return cs[i].Site+cs[i].Name < cs[j].Site+cs[j].Name })
	return cs
}

func same(a, b tlsconf.Certificate) bool {
	return a.Site == b.Site && a.Name == b.Name && a.NotAfter.Equal(b.NotAfter)
}

func TestCertificatesFiles(t *testing.T) {
	ca := tlstest.NewCA(t, tlstest.ECDSA)
	dir := t.TempDir()
	expA := time.Now().Add(40 * 24 * time.Hour).Truncate(time.Second)
	expB := time.Now().Add(10 * 24 * time.Hour).Truncate(time.Second)
	ac, ak := ca.ServerUntil(t, expA, "www.a.test", "a.test").Write(t, dir, "a-")
	bc, bk := ca.ServerUntil(t, expB, "b.test").Write(t, dir, "b-")
	table, err := tlsconf.New([]tlsconf.Site{
		{Name: "a.test", Hosts: []string{"www.a.test"}, CertFile: ac, KeyFile: ak},
		{Name: "b.test", CertFile: bc, KeyFile: bk},
	}, tlsconf.Options{ReloadEvery: time.Millisecond, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	got := sortedCerts(table)
	want := []tlsconf.Certificate{{Site: "a.test", Name: "www.a.test", NotAfter: expA}, {Site: "b.test", Name: "b.test", NotAfter: expB}}
	if len(got) != 2 || !same(got[0], want[0]) || !same(got[1], want[1]) {
		t.Fatalf("Certificates() = %v, want %v", got, want)
	}
	// A reloaded file is what is reported.
	expB2 := expB.Add(60 * 24 * time.Hour)
	c, k := ca.ServerUntil(t, expB2, "b.test").Write(t, t.TempDir(), "")
	if err := os.Rename(k, bk); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(c, bc); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	handshake(t, table, (&fixture{ca: ca}).client("b.test")) // notices the change
	if got := sortedCerts(table); len(got) != 2 || !got[1].NotAfter.Equal(expB2) {
		t.Fatalf("after reload: %v, want b.test until %v", got, expB2)
	}
}

func TestCertificatesACME(t *testing.T) {
	ca := tlstest.NewCA(t, tlstest.ECDSA)
	storage := t.TempDir()
	exp := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	p := ca.ServerUntil(t, exp, "stored.test")
	// autocert's storage format: the key, then the chain, under the name.
	if err := os.WriteFile(filepath.Join(storage, "stored.test"), append(p.KeyPEM, p.CertPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	failed := make(chan struct{}, 1)
	table, err := tlsconf.New([]tlsconf.Site{{
		Name:  "stored.test",
		Hosts: []string{"pending.test"},
		ACME:  &tlsconf.ACME{Directory: "http://127.0.0.1:1/directory", Storage: storage, RenewBefore: time.Hour},
	}}, tlsconf.Options{Log: slog.New(&logWatch{failed: failed})})
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	table.Start()
	// The pending name's first try writes an account key to storage
	// before it fails: let it, so that nothing writes there once the
	// test's directory is removed.
	defer func() {
		select {
		case <-failed:
		case <-time.After(10 * time.Second):
			t.Error("the pending name's first try did not fail")
		}
	}()
	got := table.Certificates()
	if len(got) != 1 || !same(got[0], tlsconf.Certificate{Site: "stored.test", Name: "stored.test", NotAfter: exp}) {
		t.Fatalf("Certificates() = %v, want stored.test until %v and nothing for the pending name", got, exp)
	}
}

// logWatch signals failed when an ACME try fails.
type logWatch struct{ failed chan struct{} }

func (w *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w *logWatch) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *logWatch) WithGroup(string) slog.Handler            { return w }
func (w *logWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "could not obtain") {
		select {
		case w.failed <- struct{}{}:
		default:
		}
	}
	return nil
}

// TestACMEStartsOnStart: New builds an ACME site without contacting the
// CA; Start has it obtain the certificate ahead of the first client.
func TestACMEStartsOnStart(t *testing.T) {
	// The "CA" accepts connections and closes them: a try fails at once.
	var hits atomic.Int32
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	failed := make(chan struct{}, 1)
	table, err := tlsconf.New([]tlsconf.Site{{
		Name: "start.test",
		ACME: &tlsconf.ACME{Directory: "http://" + ln.Addr().String() + "/directory", Storage: t.TempDir()},
	}}, tlsconf.Options{Log: slog.New(&logWatch{failed: failed})})
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	time.Sleep(50 * time.Millisecond)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the CA was asked %d times before Start", n)
	}
	table.Start()
	select {
	case <-failed: // the first try reached the CA and failed
	case <-time.After(10 * time.Second):
		t.Fatal("no try after Start")
	}
	if hits.Load() == 0 {
		t.Error("the try did not reach the CA")
	}
}
