package host

import (
	"github.com/sluicehq/sluice/host/observe"
	"github.com/sluicehq/sluice/host/proxy"
)

// The proxy tells the metrics why an upstream's health changed
// (sluice_upstream_health_transitions_total). Here, not in telemetry.go,
// so that host itself imports no handler.
var _ proxy.TransitionObserver = (*observe.Upstream)(nil)
