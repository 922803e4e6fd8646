package tlsconf

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"sync"
	"time"
)

// Session tickets let a returning client skip the certificate exchange
// and the asymmetric work of a full handshake. Their keys are process
// wide, so that resumption survives a config reload, and rotated: a new
// key every TicketKeyRotation, the last TicketKeysKept accepted. A ticket
// older than that is refused and the client makes a full handshake, which
// bounds what a stolen key can decrypt.
//
// Every ticket is also bound to the site (and its client-auth settings)
// that issued it: a ticket from a site without client certificates is
// never resumed on a site that requires them, and a change of client CA
// invalidates the site's tickets.
const (
	// TicketKeyRotation is how often a new session ticket key is made.
	TicketKeyRotation = 12 * time.Hour
	// TicketKeysKept is how many keys are accepted, the newest included.
	TicketKeysKept = 3
)

type ticketRing struct {
	mu   sync.Mutex
	cfg  *tls.Config // holds the keys; used only to seal and open tickets
	keys [][32]byte  // newest first
	next time.Time
}

var tickets ticketRing

// config returns the config that holds the current keys, rotating them
// when due.
func (r *ticketRing) config() *tls.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg == nil || !time.Now().Before(r.next) {
		r.rotateLocked()
	}
	return r.cfg
}

func (r *ticketRing) rotateLocked() {
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		panic(err) // crypto/rand never fails on supported systems
	}
	r.keys = append([][32]byte{k}, r.keys...)
	if len(r.keys) > TicketKeysKept {
		r.keys = r.keys[:TicketKeysKept]
	}
	if r.cfg == nil {
		r.cfg = &tls.Config{}
	}
	r.cfg.SetSessionTicketKeys(r.keys)
	r.next = time.Now().Add(TicketKeyRotation)
}

// RotateTicketKeys makes a new session ticket key now, as the scheduled
// rotation would. Tickets under the oldest kept key stop resuming.
func RotateTicketKeys() {
	tickets.mu.Lock()
	defer tickets.mu.Unlock()
	tickets.rotateLocked()
}

func (p *Policy) wrapSession(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
	ss.Extra = append(ss.Extra, p.tag)
	return tickets.config().EncryptTicket(cs, ss)
}

func (p *Policy) unwrapSession(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
	ss, err := tickets.config().DecryptTicket(identity, cs)
	if err != nil || ss == nil {
		return nil, nil // not ours, or under a retired key: full handshake
	}
	if n := len(ss.Extra); n == 0 || !bytes.Equal(ss.Extra[n-1], p.tag) {
		return nil, nil // issued by another site or under other client-auth settings
	}
	return ss, nil
}
