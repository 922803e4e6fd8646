//go:build unix

package static

import "syscall"

var (
	errENOTDIR      error = syscall.ENOTDIR
	errENAMETOOLONG error = syscall.ENAMETOOLONG
	errELOOP        error = syscall.ELOOP
)
