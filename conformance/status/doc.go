// Package status loads the admin status page in a real browser: Debian's
// headless Chromium opens it on a running sluice (the binary built from
// this checkout) that proxies a route to a test upstream through a Wasm
// filter, behind an admin token (sent by the browser as a Basic
// password), lets its script poll /status, and the test checks what the
// page then shows (the route, the upstream as healthy, the filter with
// its pool). A screenshot is kept as an artifact of the run.
//
// The test carries the build tag "conformance" (make conformance). It
// needs /usr/bin/chromium (apt-get install chromium); without it the
// test is skipped with the reason, or fails when
// SLUICE_CONFORMANCE_STRICT=1 (CI).
//
// Environment: SLUICE_CHROMIUM names another browser binary;
// SLUICE_ARTIFACTS is the folder the screenshot is written to (default
// os.TempDir()), as sluice-status.png.
package status
