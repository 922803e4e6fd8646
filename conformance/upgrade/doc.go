// Package upgrade holds sluice's operations suites, run against the
// built binary: the zero-downtime binary upgrade (sluice upgrade,
// SIGUSR2) under load and with a new binary that fails, and systemd's
// side: socket activation (LISTEN_FDS) and readiness (sd_notify). The
// suites are behind the conformance build tag (make conformance).
package upgrade
