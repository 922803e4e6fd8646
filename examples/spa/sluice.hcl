# A single-page app on http://127.0.0.1:8080: every path that names no file
# is answered with index.html (deep links like /users/42 work on reload),
# and the content-hashed assets are cached for a year.
#
#   sluice serve -c sluice.hcl
#   curl -i http://127.0.0.1:8080/users/42

site "localhost" {
  aliases = ["127.0.0.1"]
  listen  = ["127.0.0.1:8080"]

  # Built assets: no fallback, so a missing one is a 404 and not the HTML
  # of index.html under a .js name. Brotli and gzip sidecars (FILE.br,
  # FILE.gz) are sent as they are when the client accepts them.
  route "/assets/" {
    static {
      root          = "./public/assets"
      precompressed = ["br", "gzip"]
    }
  }

  # Everything else is the app.
  route "/" {
    static {
      root     = "./public"
      fallback = "/index.html"
      cache_control {
        default = "public, max-age=3600" # robots.txt, images: an hour
      }
    }
  }
}
