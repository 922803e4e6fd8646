package tlsconf_test

import (
	"crypto/tls"
	"testing"

	"github.com/sluicehq/sluice/host/tlsconf"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// BenchmarkHandshake measures one TLS 1.3 handshake and a one-byte
// exchange, client and server together, over loopback TCP: full
// (certificate signature and verification, key exchange) and resumed
// from a session ticket (key exchange only: psk_dhe_ke), with the
// hybrid post-quantum key exchange and with X25519 alone.
func BenchmarkHandshake(b *testing.B) {
	for _, k := range tlstest.Kinds {
		for _, group := range []string{"mlkem", "x25519"} {
			for _, resume := range []bool{false, true} {
				name := string(k) + "/" + group + "/full"
				if resume {
					name = string(k) + "/" + group + "/resumed"
				}
				b.Run(name, func(b *testing.B) {
					ca := tlstest.NewCA(b, k)
					cert, key := ca.Server(b, "a.test").Write(b, b.TempDir(), "")
					table, err := tlsconf.New([]tlsconf.Site{{Name: "a.test", CertFile: cert, KeyFile: key}}, tlsconf.Options{})
					if err != nil {
						b.Fatal(err)
					}
					defer table.Close()
					cc := &tls.Config{ServerName: "a.test", RootCAs: ca.Pool(), NextProtos: []string{"h2"}}
					if group == "x25519" {
						// A client without post-quantum key exchange (most
						// load generators, older browsers).
						cc.CurvePreferences = []tls.CurveID{tls.X25519}
					}
					if resume {
						cc.ClientSessionCache = tls.NewLRUClientSessionCache(1)
						if _, _, err := handshake(b, table, cc); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportAllocs()
					b.ResetTimer()
					cpu0, n := cpuTime(), 0
					for b.Loop() {
						n++
						cs, _, err := benchHandshake(b, table, cc)
						if err != nil {
							b.Fatal(err)
						}
						if cs.DidResume != resume {
							b.Fatalf("resumed %v, want %v", cs.DidResume, resume)
						}
					}
					b.ReportMetric(float64(cpuTime()-cpu0)/float64(n), "cpu-ns/op")
				})
			}
		}
	}
}

// benchHandshake is handshake without the fixed waits for
// post-handshake messages.
func benchHandshake(b *testing.B, table *tlsconf.Table, cc *tls.Config) (tls.ConnectionState, tls.ConnectionState, error) {
	c, s := tcpPair(b)
	defer c.Close()
	defer s.Close()
	srv := tls.Server(s, &tls.Config{GetConfigForClient: table.GetConfigForClient})
	errc := make(chan error, 1)
	go func() { errc <- srv.Handshake() }()
	cli := tls.Client(c, cc)
	err := cli.Handshake()
	if serr := <-errc; err == nil {
		err = serr
	}
	// One byte each way, as a request would: the client takes the
	// server's ticket on the way (both variants pay for it).
	srv.Write([]byte{0})
	cli.Read(make([]byte, 1))
	return cli.ConnectionState(), srv.ConnectionState(), err
}
