telemetry {
  traces {
    endpoint     = "http://127.0.0.1:4318"
    sample_ratio = 1.5
  }
}

site "*" {
  route "/" {
    respond {
      status = 99
    }
  }
}
