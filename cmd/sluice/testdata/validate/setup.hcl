/* Configs the filters reject when they start: `sluice validate` runs each
   filter's setup with its config, as serve does, and reports the guest's
   message at the `config` attribute (at the block's label without one). */
filter "api-key" {
  module = "../../../../filters/keyauth/keyauth.wasm"
  config = { keys = ["k1"], header = 42 }
}

filter "typo" {
  module = "../../../../filters/headers/headers.wasm"
  config = {
    respones = { set = { "X-Frame-Options" = "DENY" } }
  }
}

filter "no-keys" {
  module = "../../../../filters/keyauth/keyauth.wasm"
}

filter "fine" {
  module = "../../../../filters/headers/headers.wasm"
  config = { response = { set = { "X-Frame-Options" = "DENY" } } }
}

site "*" {
  route "/" {
    filters = ["api-key", "typo", "no-keys", "fine"]
    respond {}
  }
}
