// The sluice status page: polls /status (same origin, the admin's own
// checks and token apply) and draws it. No libraries; DOM nodes are
// built with textContent, so no value from the config is read as HTML.
"use strict";
(function () {
  var EVERY = 1500; // ms between polls
  var SVG = "http://www.w3.org/2000/svg";

  function h(tag, attrs) {
    var el = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === "class") el.className = attrs[k];
      else el.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function add(el, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(el, x); }); return; }
    el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  function put(id, node) {
    var el = document.getElementById(id);
    el.replaceChildren(node);
  }
  function pill(cls, text) { return h("span", { "class": "pill " + cls }, text); }
  function table(head, rows, numeric) {
    numeric = numeric || {};
    return h("table", {},
      h("thead", {}, h("tr", {}, head.map(function (t, i) { return h("th", numeric[i] ? { "class": "num" } : {}, t); }))),
      h("tbody", {}, rows));
  }
  function td(v, cls) { return h("td", cls ? { "class": cls } : {}, v); }
  function num(v) { return td(v, "num"); }

  function dur(s) {
    s = Math.floor(s);
    var d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    if (d) return d + "d " + hh + "h";
    if (hh) return hh + "h " + m + "m";
    if (m) return m + "m " + (s % 60) + "s";
    return s + "s";
  }
  function ago(t) {
    if (!t) return "—";
    var s = (Date.now() - Date.parse(t)) / 1000;
    return s < 1 ? "just now" : dur(s) + " ago";
  }
  // when is a time of day, with the date when it is not today.
  function when(t) {
    var d = new Date(t);
    return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
  }
  function ms(v) { return v ? (v < 1 ? v.toFixed(3) : v < 10 ? v.toFixed(2) : v.toFixed(0)) + " ms" : "—"; }
  function pct(v) { return (v * 100).toFixed(v && v < 0.01 ? 2 : 1) + "%"; }
  function rate(v) { return v < 10 ? v.toFixed(1) : v.toFixed(0); }

  // spark draws the rates of a sample ring as an inline SVG line, and
  // the error rates as a second line when any is above zero.
  function spark(samples) {
    var w = 120, ht = 26;
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "spark");
    svg.setAttribute("width", w);
    svg.setAttribute("height", ht);
    svg.setAttribute("viewBox", "0 0 " + w + " " + ht);
    var base = document.createElementNS(SVG, "line");
    base.setAttribute("x1", 0); base.setAttribute("x2", w);
    base.setAttribute("y1", ht - 1); base.setAttribute("y2", ht - 1);
    svg.appendChild(base);
    samples = samples || [];
    if (samples.length < 2) return svg;
    var max = 0, anyErr = false;
    samples.forEach(function (p) { max = Math.max(max, p.rps); if (p.error_rate > 0) anyErr = true; });
    function line(get, scale, cls) {
      var pts = samples.map(function (p, i) {
        var x = (i / (samples.length - 1)) * (w - 2) + 1;
        var y = ht - 2 - (scale ? get(p) / scale : 0) * (ht - 4);
        return x.toFixed(1) + "," + y.toFixed(1);
      });
      var pl = document.createElementNS(SVG, "polyline");
      pl.setAttribute("points", pts.join(" "));
      if (cls) pl.setAttribute("class", cls);
      svg.appendChild(pl);
    }
    line(function (p) { return p.rps; }, max);
    if (anyErr) line(function (p) { return p.error_rate; }, 1, "err");
    var title = document.createElementNS(SVG, "title");
    title.textContent = "requests per second over the last " + samples.length + " samples (max " + rate(max) + "/s)";
    svg.appendChild(title);
    return svg;
  }

  function card(k, v, s) { return h("div", { "class": "card" }, h("div", { "class": "k" }, k), h("div", { "class": "v" }, v), s ? h("div", { "class": "s" }, s) : null); }

  function overview(st) {
    var g = st.generation, ups = st.upstreams || [], down = ups.filter(function (u) { return !u.healthy; }).length;
    var calls = 0, errs = 0;
    (st.filters || []).forEach(function (f) { calls += f.invocations; errs += f.errors; });
    return [
      card("Uptime", dur(st.uptime_seconds), "started " + when(st.started_at)),
      card("Generation", "#" + g.number, g.loaded_at ? "loaded " + ago(g.loaded_at) : ""),
      card("Listeners", (st.listeners || []).length, (st.listeners || []).map(function (l) { return l.bound || l.address; }).join(", ")),
      card("Routes", (st.sites || []).reduce(function (n, s) { return n + s.routes.length; }, 0), (st.sites || []).length + " site(s)"),
      card("Upstreams", ups.length - down + " / " + ups.length, down ? down + " unavailable" : "all healthy"),
      card("Filter calls", calls, errs ? errs + " errors" : "no errors"),
    ];
  }

  function upstreams(st) {
    var ups = st.upstreams || [];
    if (!ups.length) return h("p", { "class": "muted" }, "No proxy routes.");
    return table(["Route", "Upstream", "State", "In flight", "Requests", "Error rate", "Latency", "Last minute", "Reason"],
      ups.map(function (u) {
        var state = u.healthy ? pill("ok", "healthy") : u.down ? pill("bad", "down") :
          [pill("warn", "ejected"), u.ejected_for_seconds ? h("span", { "class": "sub" }, dur(u.ejected_for_seconds) + " left") : null];
        var reason = u.reason || (u.last_error ? "last error: " + u.last_error : "");
        return h("tr", { "data-upstream": u.address, "data-state": u.healthy ? "healthy" : u.down ? "down" : "ejected" },
          td(h("code", {}, u.route)), td(u.address), td(state, "nowrap"), num(u.in_flight), num(u.num_requests),
          num(pct(u.recent.error_rate)), num(ms(u.recent.latency_ms)), td(spark(u.samples)),
          td(reason, reason ? "err-text" : ""));
      }), { 3: 1, 4: 1, 5: 1, 6: 1 });
  }

  function filters(st) {
    var fs = st.filters || [];
    if (!fs.length) return h("p", { "class": "muted" }, "No filters.");
    return table(["Filter", "Module", "Pool", "Calls", "Errors", "p99 by phase", "Last minute", "Last swap"],
      fs.map(function (f) {
        var phases = (f.phases || []).map(function (p) { return h("span", { "class": "tag" }, p.phase + " " + ms(p.p99_ms)); });
        return h("tr", { "data-filter": f.name, "data-pool-size": f.pool_size },
          td(h("strong", {}, f.name)), td(h("code", { title: f.digest }, f.digest.replace(/^sha256:/, "").slice(0, 12))),
          td("pool " + f.pool_size + " · " + f.live + " live · " + f.in_use + " in use"), num(f.invocations),
          num(f.errors ? h("span", { "class": "pill bad" }, f.errors) : 0),
          td(phases.length ? phases : h("span", { "class": "muted" }, "no calls yet")), td(spark(f.samples)),
          td(f.last_swap ? ago(f.last_swap) + (f.swap_errors ? " (" + f.swap_errors + " failed)" : "") : h("span", { "class": "muted" }, "never")));
      }), { 3: 1, 4: 1 });
  }

  function sites(st) {
    var rows = [];
    (st.sites || []).forEach(function (s) {
      s.routes.forEach(function (r, i) {
        rows.push(h("tr", { "data-route": r.path },
          td(i ? "" : h("strong", {}, s.name)), td(i ? "" : s.listen.join(", ")),
          td(h("code", {}, r.path)), td(h("span", { "class": "tag" }, r.handler)), td(r.target || ""),
          td((r.layers || []).concat(r.filters || []).length ?
            (r.layers || []).map(function (l) { return h("span", { "class": "tag" }, l); })
              .concat((r.filters || []).map(function (f) { return h("span", { "class": "tag" }, "filter " + f); })) :
            h("span", { "class": "muted" }, "none"))));
      });
    });
    if (!rows.length) return h("p", { "class": "muted" }, "No sites.");
    return table(["Site", "Listen", "Route", "Handler", "Target", "Chain"], rows);
  }

  function listeners(st) {
    return table(["Address", "Bound", "Protocols", "Sites"], (st.listeners || []).map(function (l) {
      return h("tr", {}, td(h("code", {}, l.address)), td(l.bound || "—"),
        td((l.tls ? "HTTPS" : "HTTP") + (l.http3 ? " + HTTP/3" : "")), td(l.sites.join(", ")));
    }));
  }

  function certificates(st) {
    var cs = st.certificates || [];
    if (!cs.length) return h("p", { "class": "muted" }, "No TLS sites.");
    var cls = { valid: "ok", expiring: "warn", expired: "bad", pending: "warn" };
    return table(["Site", "Name", "Source", "State", "Expires"], cs.map(function (c) {
      return h("tr", {}, td(c.site), td(c.name || "—"), td(c.source), td(pill(cls[c.state] || "", c.state)),
        td(c.not_after ? new Date(c.not_after).toLocaleDateString() + " (" + Math.floor(c.days_left) + " days)" : "—"));
    }));
  }

  function reloads(st) {
    var g = st.generation, rs = g.reloads || [];
    var out = [];
    if (g.last_error) out.push(h("p", { "class": "err-text" }, "Last reload refused: " + g.last_error));
    out.push(table(["When", "Result", "Generation"], rs.map(function (r) {
      return h("tr", {}, td(ago(r.at)), td(r.ok ? pill("ok", "ok") : h("span", { "class": "err-text" }, r.error)), td(r.generation ? "#" + r.generation : "—"));
    })));
    if (g.file) out.push(h("p", { "class": "muted" }, "Config file: ", h("code", {}, g.file)));
    return h("div", {}, out);
  }

  function store(st) {
    var s = st.store;
    if (!s) return h("p", { "class": "muted" }, "No store block.");
    var cls = { up: "ok", down: "bad" };
    var errs = Object.keys(s.errors || {}).map(function (k) { return h("span", { "class": "tag" }, k + " " + s.errors[k]); });
    return table(["Address", "State", "Errors"], [h("tr", {}, td(h("code", {}, s.address)),
      td([pill(cls[s.state] || "", s.state), s.down_since ? " since " + ago(s.down_since) : "", s.required ? " (required)" : ""]), td(errs))]);
  }

  function render(st) {
    var b = st.build;
    document.getElementById("build").textContent = b.version + " · " + b.commit.slice(0, 12) + " · " + b.go_version;
    var bad = (st.upstreams || []).some(function (u) { return !u.healthy; }) || st.generation.last_error;
    var state = document.getElementById("state");
    state.className = "pill " + (st.draining ? "bad" : bad ? "warn" : "ok");
    state.textContent = st.draining ? "draining" : bad ? "degraded" : "serving";
    put("overview", h("div", { "class": "cards" }, overview(st)));
    put("upstreams", upstreams(st));
    put("filters", filters(st));
    put("sites", sites(st));
    put("listeners", listeners(st));
    put("certificates", certificates(st));
    put("reloads", reloads(st));
    put("store", store(st));
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.setAttribute("data-loaded", "true");
  }

  function poll() {
    // location.origin, not "/status": a page opened as
    // http://user:token@host/ would make the relative URL carry the
    // credentials, which fetch refuses; the browser sends the ones it
    // was given to the same origin anyway.
    fetch(location.origin + "/status", { cache: "no-store", credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("/status: " + r.status + " " + r.statusText);
        return r.json();
      })
      .then(render)
      .catch(function (e) {
        var state = document.getElementById("state");
        state.className = "pill bad";
        state.textContent = "unreachable";
        document.getElementById("updated").textContent = String(e.message || e);
      })
      .then(function () { setTimeout(poll, EVERY); });
  }
  poll();
})();
