# The quickstart: a static site on http://127.0.0.1:8080, with security
# headers added by the first-party headers filter (WebAssembly).
#
#   make run                       (from the repository root)
#   sluice serve -c sluice.hcl     (from this folder)
#   curl -I http://127.0.0.1:8080/

admin {
  listen = "127.0.0.1:2019"
}

filter "security-headers" {
  module = "../../filters/headers/headers.wasm"
  config = {
    response = {
      set = {
        "X-Frame-Options"    = "DENY"
        "Referrer-Policy"    = "strict-origin-when-cross-origin"
        "Permissions-Policy" = "camera=(), microphone=(), geolocation=()"
      }
    }
  }
}

site "localhost" {
  aliases = ["127.0.0.1"]
  listen  = ["127.0.0.1:8080"]

  route "/" {
    filters = ["security-headers"]
    static {
      root     = "./public"
      compress = ["zstd", "br", "gzip"]
    }
  }
}
