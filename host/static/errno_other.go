//go:build !unix

package static

import "errors"

var (
	errENOTDIR      = errors.New("not a directory")
	errENAMETOOLONG = errors.New("file name too long")
	errELOOP        = errors.New("too many levels of symbolic links")
)
