//go:build race

package h2_test

const raceEnabled = true
