filter "auth" {
  module = "filters/missing.wasm"
}

site "*" {
  route "/" {
    filters = ["auth"]
    respond {}
  }
}
