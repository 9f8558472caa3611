/* Model Atlas: symbol highlighting, and "All N steps" opened by a link into it.
   Runs on every page load, including navigation.instant's in-place loads (document$).

   Hovering a symbol highlights every occurrence of it on the page. For the keyboard, each distinct symbol
   is one tab stop: its first occurrence that is shown (a step inside a closed "All N steps" is not), so a
   block page has a stop per symbol rather than one per occurrence. The stop is labelled with the symbol's
   name, from the page's .atlas-symbols element (names in plain text, and the sentence in the page's
   language). Opening or closing a block moves the stops to the occurrences now shown. */
(function () {
  "use strict";

  function highlight(key, on) {
    document.querySelectorAll('[data-sym="' + key + '"]').forEach(function (el) {
      el.classList.toggle("atlas-sym-active", on);
    });
  }

  function vocabulary() {
    var holder = document.querySelector(".atlas-symbols");
    var names = {};
    var label = "{symbol}";
    if (holder) {
      try { names = JSON.parse(holder.getAttribute("data-names") || "{}"); } catch (e) { names = {}; }
      label = holder.getAttribute("data-label") || label;
    }
    return { names: names, label: label };
  }

  function shown(el) {
    return !el.closest("details:not([open])");
  }

  function tabStops() {
    var vocab = vocabulary();
    var first = {};
    document.querySelectorAll(".katex [data-sym]").forEach(function (el) {
      var key = el.getAttribute("data-sym");
      if (!first[key] && shown(el)) {
        first[key] = el;
        var name = vocab.names[key] || el.textContent.trim();
        el.setAttribute("tabindex", "0");
        el.setAttribute("role", "button");
        el.setAttribute("aria-label", vocab.label.replace("{symbol}", name));
      } else {
        el.removeAttribute("tabindex");
        el.removeAttribute("role");
        el.removeAttribute("aria-label");
      }
    });
  }

  function symbols() {
    document.querySelectorAll(".katex [data-sym]").forEach(function (el) {
      if (el.dataset.atlasBound) return;
      el.dataset.atlasBound = "1";
      var key = el.getAttribute("data-sym");
      el.addEventListener("mouseenter", function () { highlight(key, true); });
      el.addEventListener("mouseleave", function () { highlight(key, false); });
      el.addEventListener("focus", function () { highlight(key, true); });
      el.addEventListener("blur", function () { highlight(key, false); });
    });
    tabStops();
  }

  function openTarget() {
    if (!location.hash) return;
    var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (!target) return;
    for (var d = target.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) {
      d.open = true;
    }
    target.scrollIntoView();
  }

  function init() {
    symbols();
    openTarget();
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(init);
  } else {
    document.addEventListener("DOMContentLoaded", init);
  }
  window.addEventListener("hashchange", openTarget);
  // "toggle" does not bubble; a listener capturing on the document hears every <details> open and close
  document.addEventListener("toggle", function (event) {
    if (event.target.tagName === "DETAILS" && event.target.querySelector(".katex [data-sym]")) tabStops();
  }, true);
})();
