// rewinddb explorer: draws the branch graph (its points reachable by keyboard too),
// keeps the selected event highlighted, j/k keys, picking two points to compare, and
// the CSRF header for htmx writes.
// No inline scripts anywhere: the Content-Security-Policy allows only this file.
"use strict";

(function () {
  var picks = [];

  // customdata of a point: [its page, "BRANCH@VERSION"] (set by the server).
  function openPoint(target) {
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
  }

  // The keyboard's point: an index into the points trace, kept across redraws by its
  // BRANCH@VERSION (a live update redraws the graph).
  var focused = null;

  function pointsTrace(holder) {
    var data = holder.data || [];
    return data.length ? { index: data.length - 1, trace: data[data.length - 1] } : null;
  }

  function showFocus(holder) {
    var found = pointsTrace(holder);
    var label = document.getElementById("graph-focus");
    if (!found || focused === null) return;
    var at = found.trace.customdata.findIndex(function (c) { return c[1] === focused; });
    if (at === -1) return;
    Plotly.Fx.hover(holder, [{ curveNumber: found.index, pointNumber: at }]);
    if (label) label.textContent = plainText(found.trace.hovertext[at]);
  }

  // A hover label as words: Plotly's line breaks as " · ", its escaped characters
  // decoded (parsed inert, never inserted as HTML).
  function plainText(hover) {
    var lines = String(hover).split("<br>").join(" · ");
    return new DOMParser().parseFromString(lines, "text/html").body.textContent;
  }

  function moveFocus(holder, key) {
    var found = pointsTrace(holder);
    if (!found || !found.trace.x.length) return;
    var trace = found.trace;
    var at = focused === null ? -1 : trace.customdata.findIndex(function (c) { return c[1] === focused; });
    var next = at;
    if (at === -1) {
      next = 0;
    } else if (key === "ArrowLeft" || key === "ArrowRight") {
      var step = key === "ArrowRight" ? 1 : -1;
      var best = -1;
      for (var i = 0; i < trace.x.length; i++) {
        if (trace.y[i] !== trace.y[at] || (trace.x[i] - trace.x[at]) * step <= 0) continue;
        if (best === -1 || Math.abs(trace.x[i] - trace.x[at]) < Math.abs(trace.x[best] - trace.x[at])) best = i;
      }
      if (best !== -1) next = best;
    } else {
      var lanes = trace.y.slice().sort(function (p, q) { return p - q; }).filter(function (lane, i, all) { return i === 0 || all[i - 1] !== lane; });
      var lane = lanes.indexOf(trace.y[at]) + (key === "ArrowDown" ? 1 : -1);
      if (lane >= 0 && lane < lanes.length) {
        var closest = -1;
        for (var j = 0; j < trace.x.length; j++) {
          if (trace.y[j] !== lanes[lane]) continue;
          if (closest === -1 || Math.abs(trace.x[j] - trace.x[at]) < Math.abs(trace.x[closest] - trace.x[at])) closest = j;
        }
        if (closest !== -1) next = closest;
      }
    }
    focused = trace.customdata[next][1];
    showFocus(holder);
  }

  function graphKeys(event) {
    var holder = event.currentTarget;
    var keys = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown"];
    if (keys.indexOf(event.key) !== -1) {
      moveFocus(holder, event.key);
      event.preventDefault();
    } else if (event.key === "Enter" && focused !== null) {
      var found = pointsTrace(holder);
      var at = found ? found.trace.customdata.findIndex(function (c) { return c[1] === focused; }) : -1;
      if (at !== -1) openPoint(found.trace.customdata[at]);
      event.preventDefault();
    }
  }

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
        openPoint(point.customdata);
      });
      if (!holder.dataset.keys) {
        holder.dataset.keys = "on";
        holder.addEventListener("keydown", graphKeys);
      }
      if (document.activeElement === holder) showFocus(holder);
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
    if (event.target && event.target.id === "graph") return;
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
