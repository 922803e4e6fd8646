// Runs the AssemblyScript SDK's unit tests: compiles query.ts with the
// pinned compiler (npm ci first) and calls its exports in node.
//   cd sdk/assemblyscript && npm ci && npm test
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const asc = join(here, "..", "node_modules", ".bin", "asc");

let ex, mem, uri = "/";

// AssemblyScript strings: UTF-16LE, byte length 4 bytes before the data.
function readString(ptr) {
  if (ptr === 0) return null;
  const len = new Uint32Array(mem.buffer, ptr - 4, 1)[0];
  return Buffer.from(mem.buffer, ptr, len).toString("utf16le");
}

function newString(s) {
  const b = Buffer.from(s, "utf16le");
  const ptr = ex.__new(b.length, 2); // class id 2: String
  new Uint8Array(mem.buffer, ptr, b.length).set(b);
  return ptr;
}

before(() => {
  const dir = mkdtempSync(join(tmpdir(), "sluice-as-test-"));
  try {
    const out = join(dir, "query.wasm");
    execFileSync(asc, [join(here, "query.ts"), "-o", out, "--runtime", "incremental", "--exportRuntime", "--debug"], { stdio: "inherit" });
    const host = {
      get_uri(buf, limit) {
        const b = Buffer.from(uri, "utf8");
        if (b.length <= limit) new Uint8Array(mem.buffer, buf, b.length).set(b);
        return b.length;
      },
    };
    const imports = {
      http_handler: new Proxy(host, {
        get: (t, k) => t[k] ?? (() => { throw new Error(`http_handler.${String(k)} not played by this test`); }),
      }),
      env: {
        abort(msg, file, line, col) {
          throw new Error(`abort: ${readString(msg)} at ${readString(file)}:${line}:${col}`);
        },
      },
    };
    const mod = new WebAssembly.Module(readFileSync(out));
    ex = new WebAssembly.Instance(mod, imports).exports;
    mem = ex.memory;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const name of ["testFindsAndDecodes", "testAbsent", "testMalformedEscapesAreKept", "testLogfmt"]) {
  test(name, () => {
    assert.equal(readString(ex[name]()), "");
  });
}

test("Request.query reads the request's URI and never traps", () => {
  const q = (name) => {
    const p = newString(name);
    ex.__pin(p);
    try {
      return readString(ex.requestQuery(p));
    } finally {
      ex.__unpin(p);
    }
  };
  uri = "/p?debug=%zz&x=1+2&e=%E2%82%AC";
  assert.equal(readString(ex.requestRawQuery()), "debug=%zz&x=1+2&e=%E2%82%AC");
  assert.equal(q("debug"), "%zz");
  assert.equal(q("x"), "1 2");
  assert.equal(q("e"), "\u20ac");
  assert.equal(q("missing"), null);
  uri = "/no-query";
  assert.equal(readString(ex.requestRawQuery()), "");
  assert.equal(q("debug"), null);
  uri = "/" + "a".repeat(600) + "?long=" + "b".repeat(600); // past the first buffer
  assert.equal(q("long"), "b".repeat(600));
});
