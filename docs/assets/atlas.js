/* Model Atlas: symbol highlighting, and "All N steps" opened by a link into it.
   Runs on every page load, including navigation.instant's in-place loads (document$). */
(function () {
  "use strict";

  function highlight(key, on) {
    document.querySelectorAll('[data-sym="' + key + '"]').forEach(function (el) {
      el.classList.toggle("atlas-sym-active", on);
    });
  }

  function symbols() {
    document.querySelectorAll(".katex [data-sym]").forEach(function (el) {
      if (el.dataset.atlasBound) return;
      el.dataset.atlasBound = "1";
      el.setAttribute("tabindex", "0");
      el.setAttribute("role", "button");
      el.setAttribute("aria-label", "highlight every occurrence of this symbol");
      var key = el.getAttribute("data-sym");
      el.addEventListener("mouseenter", function () { highlight(key, true); });
      el.addEventListener("mouseleave", function () { highlight(key, false); });
      el.addEventListener("focus", function () { highlight(key, true); });
      el.addEventListener("blur", function () { highlight(key, false); });
    });
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
})();
