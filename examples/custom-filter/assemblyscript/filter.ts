// The custom-filter example in AssemblyScript: adds a header from its
// config to every request and answers 403 to paths under a prefix.
import { handle, parseJSON, config, setupFailed, Request, Response } from "../../../sdk/assemblyscript/assembly/index";
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
    return false;
  }
  req.headers.set(header, value);
  return true;
});
