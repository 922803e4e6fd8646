// Unit tests of the query helpers, compiled by query.test.mjs and run
// in node. Each export returns "" or what went wrong.
import { queryValue, queryUnescape, logfmt, Request } from "../assembly/index";

function show(s: string | null): string {
  return s === null ? "null" : '"' + s + '"';
}

function check(out: string[], q: string, name: string, want: string | null): void {
  const got = queryValue(q, name);
  if (show(got) != show(want)) out.push("queryValue(" + show(q) + ", " + show(name) + ") = " + show(got) + ", want " + show(want));
}

export function testFindsAndDecodes(): string {
  const out = new Array<string>(0);
  check(out, "a=1&b=2", "b", "2");
  check(out, "a=x%20y", "a", "x y");
  check(out, "a+b=c", "a b", "c");
  check(out, "k", "k", "");
  check(out, "k=", "k", "");
  check(out, "a=1&a=2", "a", "1");
  check(out, "x=%E2%82%AC", "x", "\u20ac");
  check(out, "%61=decoded-name", "a", "decoded-name");
  check(out, "&&a=1&", "a", "1");
  check(out, "a=b=c", "a", "b=c");
  check(out, "q=caf\u00e9", "q", "caf\u00e9");
  return out.join("\n");
}

export function testAbsent(): string {
  const out = new Array<string>(0);
  check(out, "a=1", "b", null);
  check(out, "", "a", null);
  check(out, "", "", null);
  check(out, "a=1&", "", null);
  check(out, "ab=1", "a", null);
  check(out, "a%zz=1", "a", null);
  return out.join("\n");
}

export function testMalformedEscapesAreKept(): string {
  const out = new Array<string>(0);
  check(out, "debug=%zz", "debug", "%zz");
  check(out, "debug=%", "debug", "%");
  check(out, "debug=%4", "debug", "%4");
  check(out, "debug=100%", "debug", "100%");
  check(out, "debug=%zz+x%41", "debug", "%zz xA");
  check(out, "debug=%%41", "debug", "%A");
  check(out, "%zz=1", "%zz", "1");
  check(out, "b=%ff%fe", "b", queryValue("b=%ff%fe", "b")); // no trap is the point
  if (queryUnescape("%c3%a9") != "\u00e9") out.push("queryUnescape(%c3%a9) = " + queryUnescape("%c3%a9"));
  return out.join("\n");
}

// Request.query reads the URI from the host (get_uri, played by the test).
export function requestQuery(name: string): string | null {
  return new Request().query(name);
}

export function requestRawQuery(): string {
  return new Request().rawQuery();
}

// The same cases as sdk/go/sluicetest's TestLogKV.
export function testLogfmt(): string {
  const out = new Array<string>(0);
  const agents = ["curl/8", "", 'x "y" =z\\', "tab\there"];
  const wants = [
    'seen path=/a agent=curl/8 odd=""',
    'seen path=/a agent="" odd=""',
    'seen path=/a agent="x \\"y\\" =z\\\\" odd=""',
    'seen path=/a agent="tab\\x09here" odd=""',
  ];
  for (let i = 0; i < agents.length; i++) {
    const got = logfmt("seen", ["path", "/a", "agent", agents[i], "odd"]);
    if (got != wants[i]) out.push("logfmt: " + got + ", want " + wants[i]);
  }
  return out.join("; ");
}
