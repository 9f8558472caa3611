/* Model Atlas: symbol highlighting, "All N steps" opened by a link into it, the catalog sorted by a column, and
   the language switch keeping the anchor.
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

  // the view a tab set shows: a block is shown where the radio input of its position is checked
  function inShownTab(el) {
    var block = el.closest(".tabbed-block");
    if (!block) return true;
    var set = block.closest(".tabbed-set");
    var index = Array.prototype.indexOf.call(block.parentElement.children, block);
    var input = set && set.querySelectorAll(":scope > input")[index];
    return !input || input.checked;
  }

  function shown(el) {
    return !el.closest("details:not([open])") && inShownTab(el);
  }

  function tabStops() {
    var vocab = vocabulary();
    var first = {};
    // only what changes is written: an attribute set again to its own value is still a mutation the page's style
    // is recomputed for, on every page load
    document.querySelectorAll(".katex [data-sym]").forEach(function (el) {
      var key = el.getAttribute("data-sym");
      if (!first[key] && shown(el)) {
        first[key] = el;
        var label = vocab.label.replace("{symbol}", vocab.names[key] || el.textContent.trim());
        if (el.getAttribute("tabindex") !== "0") el.setAttribute("tabindex", "0");
        if (el.getAttribute("role") !== "button") el.setAttribute("role", "button");
        if (el.getAttribute("aria-label") !== label) el.setAttribute("aria-label", label);
      } else if (el.hasAttribute("tabindex")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("role");
        el.removeAttribute("aria-label");
      }
    });
  }

  // The symbols a node lies in, innermost first: a symbol inside another highlights both, as the pointer is in both.
  function symbolsAround(node) {
    var out = [];
    for (var el = node && node.closest ? node.closest(".katex [data-sym]") : null; el;
         el = el.parentElement && el.parentElement.closest(".katex [data-sym]")) {
      out.push(el);
    }
    return out;
  }

  // One listener per event on the document, not four on every occurrence of every symbol: the pointer entering
  // a symbol (mouseover from outside it), leaving it (mouseout to outside it), and the keyboard focus.
  function crossing(on) {
    return function (event) {
      symbolsAround(event.target).forEach(function (el) {
        if (!el.contains(event.relatedTarget)) highlight(el.getAttribute("data-sym"), on);
      });
    };
  }

  function focusing(on) {
    return function (event) {
      var el = event.target;
      if (el.matches && el.matches(".katex [data-sym]")) highlight(el.getAttribute("data-sym"), on);
    };
  }

  document.addEventListener("mouseover", crossing(true));
  document.addEventListener("mouseout", crossing(false));
  document.addEventListener("focusin", focusing(true));
  document.addEventListener("focusout", focusing(false));

  function openTarget() {
    if (!location.hash) return;
    var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (!target) return;
    for (var d = target.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) {
      d.open = true;
    }
    var block = target.closest(".tabbed-block");
    if (block && !inShownTab(target)) {       // a step of the other view: show that view's tab
      var index = Array.prototype.indexOf.call(block.parentElement.children, block);
      var input = block.closest(".tabbed-set").querySelectorAll(":scope > input")[index];
      if (input) input.checked = true;
      tabStops();
    }
    target.scrollIntoView();
  }

  // The catalog sorts by a column when its heading is pressed: figures by their value (grouping and decimal marks
  // of the page's language, k/M/G/T multiples), words alphabetically; a cell with no figure (—) sorts last.
  var MULTIPLE = { k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15 };

  function sortValue(text, decimal) {
    var group = decimal === "," ? /[.\s\u00a0\u202f]/g : /[,\s\u00a0\u202f]/g;
    var m = text.replace(group, "").match(decimal === "," ? /(\d+(?:,\d+)?)([kMGTP])?/ : /(\d+(?:\.\d+)?)([kMGTP])?/);
    if (!m) return null;
    return parseFloat(m[1].replace(",", ".")) * (m[2] ? MULTIPLE[m[2]] : 1);
  }

  function sortable(table) {
    if (table.dataset.atlasSortable) return;
    table.dataset.atlasSortable = "1";
    var decimal = document.documentElement.lang === "es" ? "," : ".";
    var body = table.tBodies[0];
    table.querySelectorAll("thead th").forEach(function (th, column) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "atlas-sort";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("thead th").forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        var keyed = rows.map(function (row, i) {
          var text = row.cells[column].textContent.trim();
          return { row: row, i: i, text: text, value: column === 0 ? null : sortValue(text, decimal) };
        });
        var numeric = keyed.some(function (k) { return k.value !== null; });
        keyed.sort(function (a, b) {
          var order;
          if (numeric) {
            if (a.value === null || b.value === null) return (a.value === null) - (b.value === null) || a.i - b.i;
            order = a.value - b.value;
          } else {
            order = a.text.localeCompare(b.text, document.documentElement.lang);
          }
          return (ascending ? order : -order) || a.i - b.i;
        });
        keyed.forEach(function (k) { body.appendChild(k.row); });
      });
    });
  }

  function init() {
    tabStops();
    openTarget();
    document.querySelectorAll(".atlas-catalog table").forEach(sortable);
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(init);
  } else {
    document.addEventListener("DOMContentLoaded", init);
  }
  window.addEventListener("hashchange", openTarget);
  // "toggle" does not bubble; a listener capturing on the document hears every <details> open and close
  // a tab shown: its symbols become the stops
  document.addEventListener("change", function (event) {
    if (event.target.closest && event.target.closest(".tabbed-set")) tabStops();
  });
  document.addEventListener("toggle", function (event) {
    if (event.target.tagName === "DETAILS" && event.target.querySelector(".katex [data-sym]")) tabStops();
  }, true);
  // the language switch keeps the place on the page: sections and steps have the same anchors in every language
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a.md-select__link[hreflang]");
    if (link && window.location.hash) link.href = link.href.split("#")[0] + window.location.hash;
  }, true);
})();
