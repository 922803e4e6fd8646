telemetry {
  access_log {
    fields = ["time", "upstream_adr", "status", "status"]
  }
}

site "*" {
  route "/" {
    respond {
      status = 200
    }
  }
}
