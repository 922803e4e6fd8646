package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"

	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
	"github.com/sluicehq/sluice/runtime/internal/memlimit"
	"github.com/sluicehq/sluice/runtime/internal/snapshot"
)

// Reset says when an instance is made a copy of its snapshot again.
type Reset uint8

const (
	// ResetNever keeps a guest's state (caches, counters) across requests;
	// an instance is made from the snapshot once. The default.
	ResetNever Reset = iota
	// ResetRequest makes the instance a copy of the snapshot again after
	// every request: no state leaks from one request into the next. The
	// instance is held for the whole request, both phases, so the pool
	// bounds the requests in flight through the filter.
	ResetRequest
)

func (r Reset) String() string {
	if r == ResetRequest {
		return "request"
	}
	return "never"
}

// snapEntry is the snapshot of a module's start-up under one
// configuration, shared by the module pools that use both: a reload that
// changes neither runs no start-up.
type snapEntry struct {
	snap     *snapshot.Snapshot
	image    *memlimit.Image   // the snapshot's memory, which instances map; nil where there is none
	features httpwasm.Features // what the guest enabled in its start-up
	refs     int               // module pools using it; under Module.snapMu
}

// newSnapEntry keeps sn with its memory in an image (see memlimit.Image)
// where the platform has them.
func (m *Module) newSnapEntry(sn *snapshot.Snapshot, features httpwasm.Features) *snapEntry {
	e := &snapEntry{snap: sn, features: features}
	if m.e.noImage {
		return e
	}
	im, err := memlimit.NewImage(sn.Size(), sn.Runs)
	if err != nil {
		m.e.log.Debug("snapshot memory copied into each instance: no memory image", "digest", m.digest, "reason", err)
		return e
	}
	sn.UseMemory(im.View())
	e.image = im
	return e
}

// snapKey identifies what a start-up depends on besides the module: the
// guest's config, its memory limit and its WASI environment. It is empty,
// and the snapshot not shared, when the filter mounts a filesystem (an
// fs.FS has no identity to compare).
func snapKey(opts FilterOptions) string {
	if opts.WASI.FS != nil {
		return ""
	}
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	field(opts.Config)
	field(binary.AppendUvarint(nil, uint64(opts.MemoryLimit)))
	keys := make([]string, 0, len(opts.WASI.Env))
	for k := range opts.WASI.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field([]byte(k))
		field([]byte(opts.WASI.Env[k]))
	}
	return string(h.Sum(nil))
}

// findSnapshot returns the snapshot kept under key, with a reference
// taken, or nil.
func (m *Module) findSnapshot(key string) *snapEntry {
	if key == "" {
		return nil
	}
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	e := m.snaps[key]
	if e != nil {
		e.refs++
	}
	return e
}

// keepSnapshot keeps e, just taken, under key (unless another module pool
// kept one meanwhile), with one reference for the caller.
func (m *Module) keepSnapshot(key string, e *snapEntry) {
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	e.refs = 1
	if _, ok := m.snaps[key]; !ok && key != "" {
		m.snaps[key] = e
	}
}

// releaseSnapshot drops a module pool's reference to e; the last one
// forgets it.
func (m *Module) releaseSnapshot(key string, e *snapEntry) {
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if m.snaps[key] == e {
		delete(m.snaps, key)
	}
	if e.image != nil {
		e.image.Close() // instances that mapped it keep their mapping
	}
}
