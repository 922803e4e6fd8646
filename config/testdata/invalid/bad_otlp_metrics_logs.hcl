telemetry {
  metrics {
    interval = "10s"
  }
  logs {
    level = "loud"
  }
}

site "*" {
  route "/" {
    respond {}
  }
}
