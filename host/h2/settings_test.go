package h2

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestSettingsManyWindowEntries: a SETTINGS frame of 2,730
// INITIAL_WINDOW_SIZE entries (the most a 16 KiB frame holds) with 250
// streams open costs one walk over the streams, not one per entry, which
// made seconds of CPU per connection (issue 21, finding 10); the last
// value is the one that holds.
func TestSettingsManyWindowEntries(t *testing.T) {
	c := newConn(New(Options{Handler: fuzzHandler}), &fuzzConn{r: bytes.NewReader(nil)})
	for i := range 250 {
		st := newStream(c, uint32(2*i+1))
		c.streams[st.id] = st
	}
	const entries = maxReadFrame / 6
	p := make([]byte, 0, entries*6)
	for i := range entries {
		p = binary.BigEndian.AppendUint16(p, uint16(http2.SettingInitialWindowSize))
		p = binary.BigEndian.AppendUint32(p, uint32(1000+i))
	}
	fh := http2.FrameHeader{Type: http2.FrameSettings, Length: uint32(len(p))}
	const frames = 100 // within MaxControl
	start := time.Now()
	for range frames {
		if err := c.onSettings(fh, p); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	t.Logf("%d frames of %d entries, 250 streams: %v", frames, entries, took)
	for _, st := range c.streams {
		if st.sendWindow != int64(1000+entries-1) {
			t.Fatalf("stream window %d, want the last entry's %d", st.sendWindow, 1000+entries-1)
		}
	}
	// One walk per entry is 68 M stream updates here: hundreds of
	// milliseconds at least; one per frame, 25,000: well under one.
	if took > 150*time.Millisecond {
		t.Fatalf("%d frames took %v", frames, took)
	}
}
