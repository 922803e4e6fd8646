package tlsconf

import (
	"crypto/tls"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/internal/pemfile"
)

// keyPair is a certificate and key loaded from PEM files and reloaded
// when either file changes. The check is lazy: the first handshake after
// every interval stats both files (two syscalls), and reloads when their
// size, modification time or inode moved. Renaming a new file into place
// (certbot, Kubernetes secrets) and rewriting in place are both seen. A
// file that fails to load (half written, say) leaves the last good pair
// in use and is tried again at the next check.
type keyPair struct {
	certFile, keyFile string
	every             time.Duration
	log               *slog.Logger

	cur  atomic.Pointer[tls.Certificate]
	next atomic.Int64 // unix nanoseconds of the next check

	mu    sync.Mutex // one reload at a time
	stamp [2]fileStamp
}

type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}, nil
}

func loadKeyPair(certFile, keyFile string, every time.Duration, log *slog.Logger) (*keyPair, error) {
	k := &keyPair{certFile: certFile, keyFile: keyFile, every: every, log: log}
	if err := k.load(); err != nil {
		return nil, err
	}
	k.next.Store(time.Now().Add(every).UnixNano())
	return k, nil
}

// load reads both files; the stamps are taken first so that a change
// racing with the read is seen again at the next check.
func (k *keyPair) load() error {
	cs, err := stampOf(k.certFile)
	if err != nil {
		return &pemfile.Error{Attr: "cert", Path: k.certFile, Err: err}
	}
	ks, err := stampOf(k.keyFile)
	if err != nil {
		return &pemfile.Error{Attr: "key", Path: k.keyFile, Err: err}
	}
	c, err := pemfile.KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return err
	}
	k.cur.Store(&c)
	k.stamp = [2]fileStamp{cs, ks}
	return nil
}

// FileError is a file of a Site that cannot be used. Attr names it as the
// config does: "cert" (CertFile), "key" (KeyFile) or "client_ca"
// (ClientCAFile), so that the caller can point at the attribute.
type FileError = pemfile.Error

// get returns the current pair, reloading it first when the files have
// changed since the last check.
func (k *keyPair) get() *tls.Certificate {
	if k.every > 0 {
		now := time.Now().UnixNano()
		if n := k.next.Load(); now >= n && k.next.CompareAndSwap(n, now+int64(k.every)) {
			k.check()
		}
	}
	return k.cur.Load()
}

func (k *keyPair) check() {
	k.mu.Lock()
	defer k.mu.Unlock()
	cs, err1 := stampOf(k.certFile)
	ks, err2 := stampOf(k.keyFile)
	if err1 != nil || err2 != nil || (cs == k.stamp[0] && ks == k.stamp[1]) {
		return
	}
	if err := k.load(); err != nil {
		k.log.Warn("certificate reload failed; the previous certificate stays in use", "cert", k.certFile, "error", err)
		return
	}
	k.log.Info("certificate reloaded", "cert", k.certFile)
}
