filter "big" {
  module     = "filters/keyauth.wasm"
  max_buffer = "2GiB"
}

filter "bare" {
  module     = "filters/keyauth.wasm"
  max_buffer = 1024
}

site "*" {
  route "/" {
    filters = ["big", "bare"]
    respond {}
  }
}
