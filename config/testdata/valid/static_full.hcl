# Every static attribute, and site-level error pages.
site "files.example.com" {
  listen      = [":8080", "127.0.0.1:8081"]
  error_pages = { 500 = "public/404.html" }

  route "/" {
    static {
      root               = "./public"
      index              = ["index.html", "index.htm"]
      browse             = true
      precompressed      = ["br", "gzip"]
      compress           = ["gzip"]
      compress_min_size  = "2KiB"
      compress_types     = ["text/*", "application/json"]
      fallback           = "/index.html"
      dotfiles           = true
      mime_types         = { ".wasm" = "application/wasm", ".map" = "application/json" }
      error_pages        = { 404 = "/404.html" }
      headers            = { "X-Frame-Options" = "DENY" }
      mem_cache_max_file = "1MiB"

      cache_control {
        html    = "no-store"
        hashed  = "public, max-age=604800, immutable"
        default = "public, max-age=60"
      }
    }
  }

  route "/assets/" {
    static {
      root     = "public/assets"
      compress = []
    }
  }
}
