filter "auth" {
  module  = "filters/keyauth.wasm"
  timeout = 10
}

site "*" {
  listen = [":99999"]

  route "/" {
    filters = ["auht"]
    static {
      root    = "nowhere"
      browsee = true
    }
  }

  route "/" {
    respond {}
  }

  route "/api" {
    proxy {
      upstreams = ["tcp://127.0.0.1:9000"]
      balance   = "fastest"
    }
  }
}
