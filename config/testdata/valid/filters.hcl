/* Filters: config values of every shape, env() with a default, file(),
   memory rounded up to whole Wasm pages, max_buffer, reset, pools, filter
   chains. */
filter "auth" {
  module = "filters/keyauth.wasm"
  config = {
    header  = "X-Api-Key"
    keys    = [env("SLUICE_TEST_UNSET_KEY", "dev-key")]
    banner  = file("banner.txt")
    limits  = { per_key = 10, strict = true }
    missing = null
  }
  timeout      = "5ms"
  init_timeout = "30s"
  body_timeout = "20s"
  memory       = "100KiB" # rounded up to 128KiB, two pages
  max_buffer   = "64KiB"

  pool {
    size = 4
  }
}

filter "headers" {
  module = "filters/headers.wasm"
}

filter "empty" {
  module     = "filters/headers.wasm"
  config     = {}
  memory     = "1GiB"
  max_buffer = "0B" # no body buffered
  reset      = "request"
}

site "*" {
  route "/api/" {
    filters = ["auth", "headers"]
    proxy {
      upstreams = ["http://127.0.0.1:9000"]
    }
  }

  route "/" {
    filters = ["headers"]
    static {
      root = "public"
    }
  }
}
