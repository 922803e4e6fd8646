# The config of the container image (Dockerfile): a static site on :8080,
# the admin API on loopback for the health check (sluice health).
#
#   podman run -p 8080:8080 sluice
#   podman run -p 8080:8080 -v ./site:/srv/sluice/public:ro sluice

admin {
  listen = "127.0.0.1:2019"
}

site "*" {
  listen = [":8080"]

  route "/" {
    static {
      root = "./public"
    }
  }
}
