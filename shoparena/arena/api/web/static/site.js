// The leaderboard's only script: adds "(in 3 h)" / "(2 d ago)" after every <time data-relative>.
// Relative to the server's clock (<body data-now>), which decides embargoes, not the reader's.
// The page is complete without it; it never fetches anything.
"use strict";
(function () {
  function span(seconds) {
    var s = Math.abs(seconds);
    if (s < 90) return Math.round(s) + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    if (s < 129600) return Math.round(s / 3600) + " h";
    return Math.round(s / 86400) + " d";
  }
  function label() {
    var server = Date.parse(document.body.getAttribute("data-now") || "");
    var now = isNaN(server) ? Date.now() : server;
    document.querySelectorAll("time[data-relative]").forEach(function (node) {
      var at = Date.parse(node.getAttribute("datetime"));
      if (isNaN(at)) return;
      var seconds = (at - now) / 1000;
      var text = seconds >= 0 ? "in " + span(seconds) : span(seconds) + " ago";
      var extra = node.querySelector(".relative") || document.createElement("span");
      extra.className = "relative";
      extra.textContent = " (" + text + ")";
      node.appendChild(extra);
    });
    document.body.setAttribute("data-js", "ready");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", label);
  else label();
})();
