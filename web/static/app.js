// rewinddb explorer: draws the branch graph, keeps the selected event highlighted,
// j/k keys, picking two dots to compare, and the CSRF header for htmx writes.
// No inline scripts anywhere: the Content-Security-Policy allows only this file.
"use strict";

(function () {
  var picks = [];

  function drawGraph() {
    var holder = document.getElementById("graph");
    if (!holder || !holder.dataset.figure || typeof Plotly === "undefined") return;
    var spec = JSON.parse(holder.dataset.figure);
    var config = { displaylogo: false, responsive: true, scrollZoom: true };
    Plotly.react(holder, spec.data, spec.layout, config).then(function () {
      holder.removeAllListeners && holder.removeAllListeners("plotly_click");
      holder.on("plotly_click", function (event) {
        var point = event.points[event.points.length - 1];
        if (!point || point.curveNumber !== spec.data.length - 1) return;
        // customdata of a dot: [its page, "BRANCH@VERSION"] (set by the server).
        var target = point.customdata;
        var mode = document.getElementById("compare-mode");
        if (mode && mode.checked) {
          picks.push(target[1]);
          var shown = document.getElementById("compare-picks");
          if (shown) shown.textContent = picks.join(" vs ");
          if (picks.length === 2) {
            var url = "/compare?a=" + encodeURIComponent(picks[0]) + "&b=" + encodeURIComponent(picks[1]);
            picks = [];
            window.location.assign(url);
          }
          return;
        }
        window.location.assign(target[0]);
      });
    });
  }

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("#timeline .event-row"));
  }

  function markSelected() {
    var detail = document.querySelector("#detail .event-detail");
    var selected = detail ? detail.getAttribute("data-sequence") : null;
    rows().forEach(function (row) {
      var on = row.getAttribute("data-sequence") === selected;
      row.classList.toggle("selected", on);
      if (on) row.setAttribute("aria-current", "true"); else row.removeAttribute("aria-current");
    });
  }

  function step(delta) {
    var all = rows();
    if (!all.length) return;
    var index = all.findIndex(function (row) { return row.classList.contains("selected"); });
    var next = all[Math.min(Math.max(index + delta, 0), all.length - 1)];
    if (index === -1) next = all[0];
    next.scrollIntoView({ block: "nearest" });
    next.click();
  }

  document.addEventListener("keydown", function (event) {
    var tag = (event.target && event.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "j") { step(1); event.preventDefault(); }
    if (event.key === "k") { step(-1); event.preventDefault(); }
  });

  document.addEventListener("htmx:configRequest", function (event) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    if (meta && meta.content) event.detail.headers["X-CSRF-Token"] = meta.content;
  });

  document.addEventListener("htmx:afterSwap", function () { drawGraph(); markSelected(); });
  document.addEventListener("htmx:historyRestore", function () { drawGraph(); markSelected(); });
  document.addEventListener("DOMContentLoaded", function () { drawGraph(); markSelected(); });
})();
