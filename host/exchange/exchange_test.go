package exchange_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

func TestAdapters(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("0123456789abcdef", 4096) // 64 KiB: sendfile path
	if err := os.WriteFile(filepath.Join(dir, "big"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		switch string(x.Path()) {
		case "/body":
			x.SetResponseHeader("Content-Type", "text/plain")
			x.SetResponseHeader("X-Method", string(x.Method()))
			x.SetResponseHeader("X-Query", string(x.Query()))
			x.SetResponseHeader("X-Host", string(x.RequestHeader("Host")))
			x.SetResponseHeader("X-Req", string(x.RequestHeader("x-req")))
			x.SetBody([]byte("hello"))
		case "/write":
			x.SetStatus(201)
			io.WriteString(x, "a")
			io.WriteString(x, "b")
		case "/file":
			f, err := os.Open(filepath.Join(dir, "big"))
			if err != nil {
				return err
			}
			x.SendFile(f, 16, int64(len(big))-32)
		case "/buffered-file", "/buffered-stream":
			if x.Path()[10] == 'f' {
				f, err := os.Open(filepath.Join(dir, "big"))
				if err != nil {
					return err
				}
				x.SendFile(f, 0, 32)
			} else {
				x.Stream(-1, func(w exchange.StreamWriter) error {
					_, err := io.WriteString(w, "streamed")
					return err
				})
			}
			if x.ResponseBody() != nil {
				return exchange.Errorf(500, "body visible before BufferBodyLimit")
			}
			if fits, err := x.BufferBodyLimit(-1, time.Time{}); err != nil || !fits {
				return exchange.Errorf(500, "BufferBodyLimit: fits %v, %v", fits, err)
			}
			x.SetBody(append(append([]byte{}, x.ResponseBody()...), '!'))
		case "/stream":
			x.Stream(-1, func(w exchange.StreamWriter) error {
				io.WriteString(w, "one,")
				w.Flush()
				io.WriteString(w, "two")
				return nil
			})
		case "/reader":
			x.AddResponseHeaderBytes([]byte("X-Bytes"), []byte("b1"))
			x.AddResponseHeaderBytes([]byte("X-Bytes"), []byte("b2"))
			x.SendReader(strings.NewReader("sized body"), 10)
		case "/chunks":
			x.SendReader(&trailerReader{r: strings.NewReader("chunked body")}, -1)
		case "/cl":
			x.SetBody([]byte(strconv.FormatInt(x.ContentLength(), 10)))
		case "/304":
			x.SetStatus(304)
			x.SetResponseHeader("ETag", `"x"`)
		case "/err":
			return exchange.Errorf(418, "teapot here")
		case "/rewrite":
			x.SetRequestURI("/new?q=1")
			x.SetBody(append(append([]byte{}, x.Path()...), x.Query()...))
		default:
			return exchange.Errorf(404, "not found")
		}
		return nil
	})
	for _, e := range exchangetest.Engines(t, h) {
		t.Run(e.Name, func(t *testing.T) {
			cases := []struct {
				method, path string
				status       int
				body         string
				hdr          map[string]string
			}{
				{"GET", "/body?a=b", 200, "hello", map[string]string{"Content-Type": "text/plain", "X-Method": "GET", "X-Query": "a=b", "X-Req": "v", "Content-Length": "5"}},
				{"HEAD", "/body", 200, "", map[string]string{"Content-Length": "5"}},
				{"POST", "/write", 201, "ab", nil},
				{"GET", "/file", 200, big[16 : len(big)-16], nil},
				{"HEAD", "/file", 200, "", map[string]string{"Content-Length": "65504"}},
				{"GET", "/stream", 200, "one,two", nil},
				{"GET", "/buffered-file", 200, big[:32] + "!", nil},
				{"GET", "/buffered-stream", 200, "streamed!", nil},
				{"HEAD", "/buffered-stream", 200, "", nil},
				{"GET", "/reader", 200, "sized body", map[string]string{"Content-Length": "10", "X-Bytes": "b1"}},
				{"HEAD", "/reader", 200, "", map[string]string{"Content-Length": "10"}},
				{"GET", "/chunks", 200, "chunked body", map[string]string{"Content-Length": "-1"}},
				{"GET", "/cl", 200, "0", nil},
				{"GET", "/304", 304, "", map[string]string{"ETag": `"x"`}},
				{"GET", "/err", 418, "teapot here\n", nil},
				{"GET", "/rewrite", 200, "/newq=1", nil},
			}
			for _, c := range cases {
				req, _ := http.NewRequest(c.method, e.URL+c.path, nil)
				req.Header.Set("X-Req", "v")
				resp, err := e.Client.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", c.method, c.path, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.status || string(body) != c.body {
					t.Errorf("%s %s: got %d %q, want %d %q", c.method, c.path, resp.StatusCode, trunc(body), c.status, trunc([]byte(c.body)))
				}
				if resp.Proto != e.Proto {
					t.Errorf("%s %s: proto %s, want %s", c.method, c.path, resp.Proto, e.Proto)
				}
				if c.path == "/reader" && c.method == "GET" && strings.Join(resp.Header.Values("X-Bytes"), ",") != "b1,b2" {
					t.Errorf("X-Bytes = %q, want b1 and b2", resp.Header.Values("X-Bytes"))
				}
				if c.path == "/chunks" && resp.Trailer.Get("Grpc-Status") != "0" {
					t.Errorf("%s %s: trailer Grpc-Status = %q, want 0 (trailers %v)", c.method, c.path, resp.Trailer.Get("Grpc-Status"), resp.Trailer)
				}
				for k, v := range c.hdr {
					got := resp.Header.Get(k)
					if k == "Content-Length" {
						// The client moves Content-Length into resp.ContentLength.
						got = strconv.FormatInt(resp.ContentLength, 10)
					}
					if got != v {
						t.Errorf("%s %s: %s = %q, want %q", c.method, c.path, k, got, v)
					}
				}
			}
		})
	}
}

// TestRequestBodyLength: ContentLength is 0 for a request without a
// body on every engine (HTTP/3 included, whose header carries no "no
// body" flag), the declared size for a sized body, and -1 for a body of
// unknown length, whether it comes at once or later; the body arrives
// whole either way.
func TestRequestBodyLength(t *testing.T) {
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		b, err := io.ReadAll(x.RequestBody())
		if err != nil {
			return err
		}
		x.SetBody([]byte(strconv.FormatInt(x.ContentLength(), 10) + " " + string(b)))
		return nil
	})
	// unsized hides a reader's length from the client.
	type unsized struct{ io.Reader }
	for _, e := range exchangetest.Engines(t, h) {
		t.Run(e.Name, func(t *testing.T) {
			cases := []struct {
				name, method string
				body         func() io.Reader
				want         string
			}{
				{"no body", "GET", nil, "0 "},
				{"no body (DELETE)", "DELETE", nil, "0 "},
				{"sized", "POST", func() io.Reader { return strings.NewReader("abc") }, "3 abc"},
				{"unsized", "POST", func() io.Reader { return unsized{strings.NewReader("abc")} }, "-1 abc"},
				{"unsized, late", "POST", func() io.Reader {
					pr, pw := io.Pipe()
					go func() {
						time.Sleep(50 * time.Millisecond)
						io.WriteString(pw, "late")
						pw.Close()
					}()
					return pr
				}, "-1 late"},
			}
			for _, c := range cases {
				var body io.Reader
				if c.body != nil {
					body = c.body()
				}
				req, _ := http.NewRequest(c.method, e.URL+"/", body)
				resp, err := e.Client.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(got) != c.want {
					t.Errorf("%s: got %d %q, want 200 %q", c.name, resp.StatusCode, got, c.want)
				}
			}
		})
	}
}

func trunc(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// trailerReader is a body with a trailer, like a relayed gRPC response.
type trailerReader struct{ r io.Reader }

func (t *trailerReader) Read(p []byte) (int, error) { return t.r.Read(p) }
func (t *trailerReader) VisitTrailers(fn func(name, value []byte)) {
	fn([]byte("Grpc-Status"), []byte("0"))
}

// TestAddSingleValuedResponseHeader: adding Content-Type or Server (an
// upstream's, relayed after a filter set its own) replaces the value on
// every engine, as fasthttp always has; other fields keep both values.
func TestAddSingleValuedResponseHeader(t *testing.T) {
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetResponseHeader("Content-Type", "text/filter")
		x.SetResponseHeader("X-Both", "filter")
		x.AddResponseHeaderBytes([]byte("Content-Type"), []byte("text/upstream"))
		x.AddResponseHeaderBytes([]byte("X-Both"), []byte("upstream"))
		x.SetBody([]byte("ok"))
		return nil
	})
	for _, e := range exchangetest.Engines(t, h) {
		resp, err := e.Client.Get(e.URL + "/")
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		resp.Body.Close()
		if got := resp.Header.Values("Content-Type"); len(got) != 1 || got[0] != "text/upstream" {
			t.Errorf("%s: Content-Type %q, want the added value alone", e.Name, got)
		}
		if got := resp.Header.Values("X-Both"); len(got) != 2 {
			t.Errorf("%s: X-Both %q, want both values", e.Name, got)
		}
	}
}
