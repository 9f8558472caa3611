/* Model Atlas: the language switch leads to the same place on the other language's page. Sections and steps
   have the same anchors in every language, so each link of the switch carries the anchor the reader is at
   (#cost): set when the page loads and whenever the anchor changes, so that a click, the keyboard, a middle
   click or a copied link all keep it. */
(function () {
  "use strict";

  function keepAnchor() {
    document.querySelectorAll("a.md-select__link[hreflang]").forEach(function (link) {
      link.href = link.href.split("#")[0] + window.location.hash;
    });
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(keepAnchor);
  } else {
    document.addEventListener("DOMContentLoaded", keepAnchor);
  }
  window.addEventListener("hashchange", keepAnchor);
})();
