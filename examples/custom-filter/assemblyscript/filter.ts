// The custom-filter example in AssemblyScript: adds a header from its
// config to every request, tags every response it lets through, and
// answers 403 to paths under a prefix (and logs it).
import { handle, parseJSON, config, setupFailed, logKV, LOG_INFO, Request, Response } from "../../../sdk/assemblyscript/assembly/index";
export { handle_request, handle_response } from "../../../sdk/assemblyscript/assembly/index";

// Top-level code runs once per instance, in _initialize.
const cfg = parseJSON(config());
const header = cfg.getString("header", "X-Example");
const value = cfg.getString("value", "");
const denyPrefix = cfg.getString("deny_prefix", "");
if (header.length == 0) setupFailed("header must be a non-empty string");

handle((req: Request, resp: Response): bool => {
  if (denyPrefix.length > 0 && req.path().startsWith(denyPrefix)) {
    resp.respond(403, "text/plain; charset=utf-8", "forbidden\n");
    const agent = req.headers.get("User-Agent");
    logKV(LOG_INFO, "denied", ["path", req.path(), "agent", agent === null ? "" : agent]);
    return false;
  }
  req.headers.set(header, value);
  // ?debug=… reaches the upstream decoded, as X-Debug; a malformed escape
  // (?debug=%zz) is no error.
  const debug = req.query("debug");
  if (debug !== null) req.headers.set("X-Debug", debug);
  // Set before continuing: the client gets it with the upstream's
  // response (sdk/ABI.md, "Response headers set before the next handler").
  resp.headers.set("X-Filtered-By", "custom-filter");
  return true;
});
