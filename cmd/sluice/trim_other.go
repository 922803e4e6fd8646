//go:build !linux

package main

// trimStartup does nothing outside Linux.
func trimStartup() {}
