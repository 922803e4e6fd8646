filter "auth" {
  module  = "filters/keyauth.wasm"
  timeout = 10
}

site "*" {
  route "/" {
    filters = ["auth"]
    respond {}
  }
}
