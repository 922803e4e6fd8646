// Package readme runs the filter author's documentation as written: the
// build and run commands of each SDK README (sdk/go, sdk/c, sdk/rust,
// sdk/assemblyscript) and of examples/custom-filter, in a temporary copy
// of the SDKs, then the built filter through `sluice filter run` and a
// served route. It sits outside the request path; its test is the whole
// newcomer's path from README to a serving filter.
//
// A README marks what is run in the info string of its fenced blocks,
// which a reader of the rendered page does not see:
//
//   - ```sh run: commands, run in order in one bash script per README
//     (`set -euo pipefail`), from a folder holding the checkout copy as
//     `sluice/`; `cd` carries over from block to block as in a terminal;
//   - ```LANG file=NAME: a file the reader writes, written to NAME in the
//     script's current folder at that point.
//
// Other blocks (apt-get lines, a served example with curl) are not run.
package readme
