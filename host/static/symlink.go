package static

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxLinks bounds the symlinks followed for one path, as the kernel's
// own limit (40 on Linux) does.
const maxLinks = 40

// hiddenTarget reports whether name (a cleaned path) reaches, through
// the symlinks inside root, a segment starting with '.': "/link" where
// link -> .secret, or "/d/config" where d -> .git. The dotfile rule of
// the request path (hiddenSegment) then holds for what is opened, not
// only for what was asked. Every component met on the way counts, a
// leading ".well-known" excepted as in hiddenSegment. A path it cannot
// resolve (a missing component) is left to the open that follows,
// which os.Root confines to the root; an absolute or looping link is
// refused here.
func hiddenTarget(root *os.Root, name string) bool {
	todo := strings.Split(strings.Trim(name, "/"), "/")
	var done []string // the components resolved so far, no links
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		if c[0] == '.' && !(len(done) == 0 && c == ".well-known") {
			return true
		}
		p := path.Join(append(done, c)...)
		fi, err := root.Lstat(p)
		if err != nil {
			return false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return true
		}
		target, err := root.Readlink(p)
		if err != nil {
			return false
		}
		target = filepath.ToSlash(target)
		if path.IsAbs(target) || filepath.IsAbs(target) {
			return true // os.Root refuses it too
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return false
}

// hasLink reports whether a component of rel (a path relative to root)
// is a symlink, or cannot be looked at.
func hasLink(root *os.Root, rel string) bool {
	for i := 1; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			continue
		}
		fi, err := root.Lstat(rel[:i])
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}
