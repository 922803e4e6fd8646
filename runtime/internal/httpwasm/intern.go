package httpwasm

import "hash/maphash"

// internSlots and internMax bound the strings an instance keeps: at most
// internSlots of at most internMax bytes each.
const (
	internSlots = 64
	internMax   = 256
)

// interner makes strings of the header names and values a guest passes,
// reusing the last string made for the same bytes. A filter sets the same
// fields to the same values on every request (the headers filter does
// nothing else), so after the first request setting a header allocates
// nothing, whatever the exchange keeps. It is a direct-mapped cache: a
// value that changes on every request just replaces its slot. Strings are
// immutable, so the exchange may keep them.
type interner struct {
	seed  maphash.Seed
	slots *[internSlots]string
}

func (in *interner) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > internMax {
		return string(b)
	}
	if in.slots == nil {
		in.seed = maphash.MakeSeed()
		in.slots = new([internSlots]string)
	}
	slot := &in.slots[maphash.Bytes(in.seed, b)%internSlots]
	if *slot == string(b) { // no allocation: the conversion is only compared
		return *slot
	}
	*slot = string(b)
	return *slot
}
