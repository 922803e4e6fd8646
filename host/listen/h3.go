package listen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/handover"
)

// h3Server is HTTP/3 on a TLS listener's port, over UDP: quic-go's
// http3.Server in front of the same handler (Deps.Handler, and so the
// same front door) and error renderer as the other engines, and the same certificates
// (the listener's tlsConfig, with ALPN h3). It opens and closes with its
// listener; Options.HTTP3 turns it on.
type h3Server struct {
	srv *http3.Server
	pc  net.PacketConn
	tr  *quic.Transport
	ln  *quic.Listener
}

// h3Protos is the only ALPN protocol offered over QUIC.
var h3Protos = []string{http3.NextProtoH3}

// h3AltSvc is the Alt-Svc value HTTP/1.1 and HTTP/2 responses carry
// for HTTP/3 on the bound TCP address's port.
func h3AltSvc(tcp net.Addr) string {
	return fmt.Sprintf(`h3=":%d"; ma=86400`, tcp.(*net.TCPAddr).Port)
}

// openH3 binds UDP on the TCP socket's host and port (tcp is the bound
// TCP address, so a configured port 0 gets the same port for both), or
// takes the socket from inherit.
func (l *Listener) openH3(tcp net.Addr, inherit *handover.Sockets) (*h3Server, error) {
	o := l.opts
	host, _, err := net.SplitHostPort(o.Address)
	if err != nil {
		return nil, fmt.Errorf("listener %q: http3: %w", o.Address, err)
	}
	port := tcp.(*net.TCPAddr).Port
	pc, inherited := inherit.PacketConn(o.Address)
	if !inherited {
		if pc, err = net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port))); err != nil {
			return nil, fmt.Errorf("listener %q: http3: %w", o.Address, err)
		}
	}
	tr := &quic.Transport{Conn: pc}
	ln, err := tr.Listen(&tls.Config{
		GetConfigForClient: l.h3TLSConfig,
		NextProtos:         h3Protos,
		MinVersion:         tls.VersionTLS13,
	}, &quic.Config{
		HandshakeIdleTimeout: l.handshake,
		MaxIncomingStreams:   250, // as HTTP/2's MaxConcurrentStreams
		Allow0RTT:            false,
	})
	if err != nil {
		_ = tr.Close()
		_ = pc.Close()
		return nil, fmt.Errorf("listener %q: http3: %w", o.Address, err)
	}
	h := &h3Server{pc: pc, tr: tr, ln: ln}
	h.srv = &http3.Server{
		Handler:        l.h3Deadlines(exchange.Std(l.handler, l.renderError)),
		MaxHeaderBytes: int(o.MaxHeaderBytes),
		IdleTimeout:    o.IdleTimeout,
		Logger:         l.log.With("address", o.Address, "engine", "http3"),
	}
	l.log.Info("listening", "address", pc.LocalAddr().String(), "http3", true)
	return h, nil
}

// serve runs the HTTP/3 server until shutdown; it returns
// http.ErrServerClosed then.
func (h *h3Server) serve(maxConns int) error {
	var ln http3.QUICListener = h.ln
	if maxConns > 0 {
		ln = &quicLimitListener{QUICListener: ln, sem: make(chan struct{}, maxConns)}
	}
	return h.srv.ServeListener(ln)
}

// shutdown stops new connections (handshakes in flight are refused),
// sends GOAWAY on the open ones, waits for their requests until ctx ends
// and then closes them and the socket.
func (h *h3Server) shutdown(ctx context.Context) error {
	_ = h.ln.Close()
	err := h.srv.Shutdown(ctx)
	_ = h.tr.Close()
	_ = h.pc.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// close closes at once: Apply undoing a listener it opened.
func (h *h3Server) close() {
	_ = h.srv.Close()
	_ = h.ln.Close()
	_ = h.tr.Close()
	_ = h.pc.Close()
}

// closeH3 closes a listener's HTTP/3 side at once, if it has one.
func (l *Listener) closeH3() {
	if l.h3 != nil {
		l.h3.close()
	}
}

// h3TLSConfig is tlsConfig for QUIC handshakes: the same site
// certificate and policy, offering only h3. The site's config is shared
// with the TCP handshakes, so it is cloned, not changed. tls-alpn-01
// challenges are answered over TCP only: a QUIC client offering just
// acme-tls/1 fails ALPN.
func (l *Listener) h3TLSConfig(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	c, err := l.tlsConfig(hello)
	if err != nil || c == nil {
		return c, err
	}
	c = c.Clone()
	c.NextProtos = h3Protos
	return c, nil
}

// h3Deadlines applies the listener's read and write timeouts to each
// HTTP/3 request stream; quic-go's server has none of its own.
func (l *Listener) h3Deadlines(next http.Handler) http.Handler {
	rt, wt := l.opts.ReadTimeout, l.opts.WriteTimeout
	if rt <= 0 && wt <= 0 {
		return next
	}
	type deadliner interface {
		SetReadDeadline(time.Time) error
		SetWriteDeadline(time.Time) error
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, ok := w.(deadliner); ok {
			now := time.Now()
			if rt > 0 {
				_ = d.SetReadDeadline(now.Add(rt))
			}
			if wt > 0 {
				_ = d.SetWriteDeadline(now.Add(wt))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// quicLimitListener bounds the QUIC connections open at once, like
// limitListener for TCP: while the limit is reached nothing is accepted,
// quic-go's accept queue fills, and further handshakes are refused.
type quicLimitListener struct {
	http3.QUICListener
	sem chan struct{}
}

func (l *quicLimitListener) Accept(ctx context.Context) (*quic.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c, err := l.QUICListener.Accept(ctx)
	if err != nil {
		<-l.sem
		return nil, err
	}
	go func() {
		<-c.Context().Done()
		<-l.sem
	}()
	return c, nil
}
