// Tables and scrolling boxes that work on a phone and from the keyboard (every page loads this).
//
// - A table that is not in a scrolling box of its own gets one, so a wide table scrolls inside
//   it instead of pushing the whole page sideways; its first column stays in view (site.css).
// - A table marked `cards` turns into one card per row on a phone (site.css); each cell gets
//   its column's name to show beside it, and explicit ARIA table roles, because a table laid out
//   as blocks loses its table semantics in some browsers.
// - A box that scrolls must be reachable from the keyboard (WCAG 2.1.1): one with nothing
//   focusable inside gets a tab stop and a name (axe-core's scrollable-region-focusable).
// Without this script, wide tables still fit: site.css lets them scroll in their own box.
(function () {
  "use strict";

  var script = document.currentScript;
  var regionWord = (script && script.getAttribute("data-region")) || "Scrollable content";
  var FOCUSABLE = "a[href], button, input, select, textarea, [tabindex], [contenteditable]";

  function scrollsX(el) {
    return /(auto|scroll|hidden)/.test(getComputedStyle(el).overflowX);
  }

  function insideScroller(el) {
    for (var p = el.parentElement; p && p.tagName !== "MAIN" && p !== document.body; p = p.parentElement) {
      if (scrollsX(p)) return true;
    }
    return false;
  }

  // A name for a box: its table's caption, else the nearest heading before it.
  function nameOf(box) {
    var caption = box.querySelector("caption");
    if (caption && caption.textContent.trim()) return caption.textContent.trim();
    for (var el = box; el && el.tagName !== "MAIN"; el = el.parentElement) {
      for (var s = el.previousElementSibling; s; s = s.previousElementSibling) {
        if (/^H[1-6]$/.test(s.tagName)) return s.textContent.trim();
      }
    }
    return regionWord;
  }

  function boxTables() {
    document.querySelectorAll("main table").forEach(function (table) {
      if (table.classList.contains("cards") || insideScroller(table)) return;
      var box = document.createElement("div");
      box.className = "table-scroll";
      table.parentNode.insertBefore(box, table);
      box.appendChild(table);
    });
  }

  function labelCards(table) {
    var heads = [];
    table.querySelectorAll("thead th").forEach(function (th) {
      heads.push(th.textContent.trim());
      th.setAttribute("role", "columnheader");
    });
    table.setAttribute("role", "table");
    table.querySelectorAll("thead, tbody").forEach(function (g) { g.setAttribute("role", "rowgroup"); });
    table.querySelectorAll("tr").forEach(function (tr) {
      tr.setAttribute("role", "row");
      if (tr.parentElement.tagName === "THEAD") return;
      Array.prototype.forEach.call(tr.children, function (cell, i) {
        cell.setAttribute("role", cell.tagName === "TH" ? "rowheader" : "cell");
        if (heads[i] && !cell.hasAttribute("data-label")) cell.setAttribute("data-label", heads[i]);
      });
    });
  }

  function cards() {
    document.querySelectorAll("main table.cards").forEach(function (table) {
      labelCards(table);
      // Rows added later (the exercise page adds a submission as it is made) are labelled too.
      new MutationObserver(function () { labelCards(table); })
        .observe(table, { childList: true, subtree: true });
    });
  }

  function reachable() {
    document.querySelectorAll("main *").forEach(function (el) {
      if (el.hasAttribute("tabindex") || el.closest(".CodeMirror")) return;
      var style = getComputedStyle(el);
      if (!/(auto|scroll)/.test(style.overflowX + style.overflowY)) return;
      if (el.scrollWidth <= el.clientWidth + 1 && el.scrollHeight <= el.clientHeight + 1) return;
      if (el.querySelector(FOCUSABLE)) return;
      el.tabIndex = 0;
      if (!el.hasAttribute("role")) el.setAttribute("role", "region");
      if (!el.hasAttribute("aria-label") && !el.hasAttribute("aria-labelledby")) {
        el.setAttribute("aria-label", nameOf(el));
      }
    });
  }

  function start() {
    boxTables();
    cards();
    reachable();
    var pending = null;
    // A phone turned sideways, or a window resized, can make another box scroll.
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(reachable, 150);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
