//go:build linux

package main

import (
	"bufio"
	"debug/elf"
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
	relro := hasRELRO(exe)
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// 00400000-01090000 r-xp 00000000 08:01 1234   /path/to/exe
		fields := strings.Fields(s.Text())
		if len(fields) < 6 || fields[5] != exe || !trimmable(fields[1], relro) {
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

// trimmable reports whether a mapping of the executable with these
// permissions (as /proc/self/maps writes them) holds only pages that are
// the file's own bytes. A writable one does not. Nor, in an executable
// with a RELRO segment (a PIE build, as distributions make), does a
// read-only one: the dynamic loader wrote relocated pointers into it
// before making it read-only, and dropping those pages would bring back
// the file's unrelocated bytes. Code is never relocated in place.
func trimmable(perms string, relro bool) bool {
	if strings.Contains(perms, "w") {
		return false
	}
	return !relro || strings.Contains(perms, "x")
}

// hasRELRO reports whether the executable has a PT_GNU_RELRO segment;
// when it cannot tell, it says yes, the safe answer.
func hasRELRO(exe string) bool {
	f, err := elf.Open(exe)
	if err != nil {
		return true
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_RELRO {
			return true
		}
	}
	return false
}
