package config_test

// config decodes the blocks of a route with the decoders their handler
// packages register; the tests of this package load whole configs, so
// they link every handler in (config itself imports nothing of the host).
import _ "github.com/sluicehq/sluice/host/handlers"
