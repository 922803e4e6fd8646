filter "auth" {
  module = "filters/keyauth.wasm"
  pool {
    size = 1e99999999
  }
}

site "*" {
  route "/" {
    respond {}
  }
}
