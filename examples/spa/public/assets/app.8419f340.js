// A single-page app without a framework: the server answers every deep
// link with index.html, and this script renders the page for the path.
// Built assets carry a content hash in their name, so they can be cached
// for a year; index.html is revalidated on every load and names them.
(function () {
  "use strict";

  var users = {
    "1": { name: "Ada Lovelace", role: "analyst" },
    "42": { name: "Douglas Adams", role: "towel bearer" },
    "1024": { name: "Grace Hopper", role: "rear admiral" }
  };

  var routes = [
    { pattern: /^\/$/, render: home },
    { pattern: /^\/users\/?$/, render: userList },
    { pattern: /^\/users\/([0-9]+)\/?$/, render: userPage },
    { pattern: /^\/about\/?$/, render: about }
  ];

  function el(tag, text, attrs) {
    var e = document.createElement(tag);
    if (text) e.textContent = text;
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    return e;
  }

  function link(href, text) {
    var a = el("a", text, { href: href });
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      history.pushState(null, "", href);
      render();
    });
    return a;
  }

  function home(view) {
    view.appendChild(el("h1", "Home"));
    view.appendChild(el("p", "Every path below is a deep link: reload it and sluice serves index.html, then this script renders the page."));
  }

  function userList(view) {
    view.appendChild(el("h1", "Users"));
    var ul = el("ul");
    Object.keys(users).forEach(function (id) {
      var li = el("li");
      li.appendChild(link("/users/" + id, users[id].name));
      ul.appendChild(li);
    });
    view.appendChild(ul);
  }

  function userPage(view, id) {
    var u = users[id];
    if (!u) return notFound(view);
    view.appendChild(el("h1", u.name));
    view.appendChild(el("p", "User " + id + ", " + u.role + "."));
  }

  function about(view) {
    view.appendChild(el("h1", "About"));
    view.appendChild(el("p", "Served by sluice: static { fallback = \"/index.html\" }."));
  }

  function notFound(view) {
    view.appendChild(el("h1", "Not found"));
    view.appendChild(el("p", "The app has no page at " + location.pathname + "."));
  }

  function render() {
    var view = document.getElementById("view");
    view.textContent = "";
    var path = location.pathname;
    for (var i = 0; i < routes.length; i++) {
      var m = routes[i].pattern.exec(path);
      if (m) return routes[i].render(view, m[1]);
    }
    notFound(view);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var nav = document.getElementById("nav");
    [["/", "Home"], ["/users", "Users"], ["/users/42", "User 42"], ["/about", "About"]].forEach(function (l) {
      nav.appendChild(link(l[0], l[1]));
    });
    window.addEventListener("popstate", render);
    render();
  });
})();
