admin {
  token = env("SLUICE_TEST_UNSET")
}

site "*" {
  route "/" {
    respond {}
  }
}
