package runtime_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// benchInstantiate compares making an instance by running the guest's
// start-up with making it from the snapshot, for one guest and config.
// Besides wall time it reports the CPU time of the process per instance,
// steadier on a loaded machine.
func benchInstantiate(b *testing.B, wasm, config []byte) {
	ev := newEnv(b)
	f := ev.filterBytes(b, "bench", wasm, runtime.FilterOptions{PoolSize: 1, Config: config, MemoryLimit: 256 << 20, InitTimeout: time.Minute})
	for _, mode := range []struct {
		name string
		snap bool
	}{{"startup", false}, {"snapshot", true}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for range b.N {
				if err := runtime.Instantiate(f, mode.snap); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// ecKeys is a jwt config with n ES256 keys as PEM: a start-up that does
// real work (PEM, ASN.1 and curve point checks for each key).
func ecKeys(b *testing.B, n int) []byte {
	type key struct {
		KID string `json:"kid"`
		PEM string `json:"pem"`
	}
	var cfg struct {
		Keys []key `json:"keys"`
	}
	for i := range n {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			b.Fatal(err)
		}
		cfg.Keys = append(cfg.Keys, key{KID: fmt.Sprint(i), PEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))})
	}
	j, _ := json.Marshal(cfg)
	return j
}

// BenchmarkInstantiate: instance creation from the start-up and from the
// snapshot, for a standard Go guest (the jwt filter; with 1000 keys to
// parse, a start-up that does real work), a C filter (headers) and a
// WAT guest.
func BenchmarkInstantiate(b *testing.B) {
	jwt, jwtConfig := jwtGuest(b)
	headers, err := os.ReadFile("../filters/headers/headers.wasm")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("go-jwt", func(b *testing.B) { benchInstantiate(b, jwt, jwtConfig) })
	b.Run("go-waf", func(b *testing.B) { // Coraza with the CRS parsed at start-up
		waf, err := os.ReadFile("../filters/waf/waf.wasm")
		if err != nil {
			b.Fatal(err)
		}
		benchInstantiate(b, waf, []byte(`{}`))
	})
	b.Run("go-jwt-1000-keys", func(b *testing.B) { benchInstantiate(b, jwt, ecKeys(b, 1000)) })
	b.Run("c-headers", func(b *testing.B) {
		benchInstantiate(b, headers, []byte(`{"response":{"set":{"X-Frame-Options":"DENY"},"remove":["X-Powered-By"]}}`))
	})
	b.Run("wat-snap", func(b *testing.B) { benchInstantiate(b, guest(b, "snap"), snapConfig) })
}

// BenchmarkReset: one request (both phases) through a guest with and
// without reset = "request"; the difference is the cost of the reset.
func BenchmarkReset(b *testing.B) {
	jwt, jwtConfig := jwtGuest(b)
	token := "Bearer " + hs256("s3cret", "bench")
	guests := []struct {
		name   string
		wasm   []byte
		config []byte
		header []string
	}{
		{"wat-snap", guest(b, "snap"), snapConfig, nil},
		{"go-jwt", jwt, jwtConfig, []string{"Authorization", token}},
	}
	for _, g := range guests {
		ev := newEnv(b, func(o *runtime.EngineOptions) { o.Observer = nil })
		ctx := context.Background()
		m, err := ev.e.Compile(ctx, g.wasm) // once, for both
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close(ctx) })
		for _, r := range []runtime.Reset{runtime.ResetNever, runtime.ResetRequest} {
			b.Run(g.name+"/"+r.String(), func(b *testing.B) {
				f := ev.filterBytes(b, g.name, g.wasm, runtime.FilterOptions{PoolSize: 1, Config: g.config, Reset: r, MemoryLimit: 64 << 20})
				b.ReportAllocs()
				cpu0 := cpuTime()
				b.ResetTimer()
				for range b.N {
					x := filtertest.NewExchange("GET", "/", g.header...)
					if _, err := roundTrip(f, x, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
				if s := f.Stats(); r == runtime.ResetRequest && s.Resets < uint64(b.N) {
					b.Fatalf("%d resets for %d requests", s.Resets, b.N)
				}
			})
		}
	}
}
