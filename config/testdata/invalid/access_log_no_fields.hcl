telemetry {
  access_log {
    format = "json"
    fields = []
  }
}

site "*" {
  route "/" {
    respond {
      status = 200
    }
  }
}
