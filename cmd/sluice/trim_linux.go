//go:build linux

package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// trimStartup drops from the resident set the pages of the executable's
// read-only mappings (code, constants, the function tables) that
// starting up touched: config parsing, the HCL and cty libraries, every
// package's init. They are clean and file-backed, so nothing is lost:
// the pages the request path uses come back on first use, from the page
// cache. Writable mappings (data, heap, stacks) are left alone.
func trimStartup() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// 00400000-01090000 r-xp 00000000 08:01 1234   /path/to/exe
		fields := strings.Fields(s.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		// Not unix.Madvise: the mapping is no Go memory to make a slice of.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
}
