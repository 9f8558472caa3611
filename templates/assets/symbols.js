/* Model Atlas: a symbol explains itself. Hovering a symbol of an equation, focusing it with the keyboard, or
   tapping it shows a small popover beside it (never over it): the symbol's name, what it is, its shape with named
   dims and the line of code that computes it or first reads it, linked to that line in the page's Code section
   where the page shows it. Escape, a tap elsewhere, or leaving the symbol closes it.

   Everything it says is on the page already, from the equations' data: the .atlas-symbols element holds the
   names (data-names), the facts (data-facts: kind, shape, file, line) and the words in the page's language.
   atlas.js makes the symbols tab stops and highlights them; this file only adds the popover. */
(function () {
  "use strict";

  var popover = null;     // the one popover of the page
  var owner = null;       // the symbol element it describes
  var hideTimer = null;

  function holder() {
    return document.querySelector(".atlas-symbols");
  }

  function json(el, name) {
    try { return JSON.parse(el.getAttribute(name) || "{}"); } catch (e) { return {}; }
  }

  // the line's anchor in a Code excerpt of this page: a block titled "file first–last" holding the line
  function codeLink(file, line) {
    var blocks = document.querySelectorAll(".highlight .filename");
    for (var i = 0; i < blocks.length; i++) {
      var m = blocks[i].textContent.trim().match(/^(.*) (\d+)\u2013(\d+)$/);
      if (!m || m[1] !== file || line < +m[2] || line > +m[3]) continue;
      var table = blocks[i].closest("table") || blocks[i].parentElement;
      var anchor = table && table.querySelector('.linenos a[href$="-' + line + '"]');
      if (anchor) return anchor.getAttribute("href");
    }
    return null;
  }

  function row(className, text) {
    var el = document.createElement("div");
    el.className = "atlas-symbol-popover__" + className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function fill(box, key, fallbackName) {
    var h = holder();
    var names = json(h, "data-names");
    var facts = json(h, "data-facts")[key] || {};
    var kinds = json(h, "data-kinds");
    box.textContent = "";
    var name = row("name");
    var strong = document.createElement("strong");
    strong.textContent = names[key] || fallbackName;
    name.appendChild(strong);
    if (kinds[facts.kind]) name.appendChild(document.createTextNode(": " + kinds[facts.kind]));
    box.appendChild(name);
    if (facts.shape) {
      box.appendChild(row("shape", (h.getAttribute("data-shape") || "shape") + " " + facts.shape));
    }
    if (facts.file && facts.line) {
      var sentence = h.getAttribute(facts.kind === "value" ? "data-computed" : "data-read") || "{place}";
      var parts = sentence.split("{place}");
      var place = facts.file + ":" + facts.line;
      var href = codeLink(facts.file, facts.line);
      var source = row("source");
      source.appendChild(document.createTextNode(parts[0]));
      var code = document.createElement(href ? "a" : "code");
      if (href) {
        code.href = href;
        code.className = "atlas-symbol-popover__line";
        var inner = document.createElement("code");
        inner.textContent = place;
        code.appendChild(inner);
        code.addEventListener("click", hide);
      } else {
        code.textContent = place;
      }
      source.appendChild(code);
      source.appendChild(document.createTextNode(parts.slice(1).join("{place}")));
      box.appendChild(source);
    }
  }

  function ensure() {
    if (popover && document.body.contains(popover)) return popover;
    popover = document.createElement("div");
    popover.className = "atlas-symbol-popover";
    popover.id = "atlas-symbol-popover";
    popover.setAttribute("role", "tooltip");
    popover.hidden = true;
    popover.addEventListener("mouseenter", function () { clearTimeout(hideTimer); });
    popover.addEventListener("mouseleave", function () { later(); });
    document.body.appendChild(popover);
    return popover;
  }

  // below the symbol, or above it where the viewport has no room below; inside the viewport's width
  function place(box, el) {
    var r = el.getBoundingClientRect();
    var gap = 6;
    box.style.left = "0px";
    box.style.top = "0px";
    var w = box.offsetWidth, h = box.offsetHeight;
    var vw = document.documentElement.clientWidth, vh = window.innerHeight;
    var top = r.bottom + gap;
    if (top + h > vh && r.top - gap - h >= 0) top = r.top - gap - h;
    var left = Math.min(Math.max(8, r.left + r.width / 2 - w / 2), Math.max(8, vw - w - 8));
    box.style.left = (left + window.scrollX) + "px";
    box.style.top = (top + window.scrollY) + "px";
  }

  function show(el) {
    if (!holder()) return;
    clearTimeout(hideTimer);
    var box = ensure();
    var key = el.getAttribute("data-sym");
    if (owner !== el || box.hidden) {
      if (owner) owner.removeAttribute("aria-describedby");
      fill(box, key, el.textContent.trim());
      owner = el;
      box.setAttribute("data-for", key);
      box.hidden = false;
      el.setAttribute("aria-describedby", box.id);
    }
    place(box, el);
  }

  function hide() {
    clearTimeout(hideTimer);
    if (popover) popover.hidden = true;
    if (owner) owner.removeAttribute("aria-describedby");
    owner = null;
  }

  function later() {
    clearTimeout(hideTimer);
    hideTimer = setTimeout(hide, 200);
  }

  function symbolOf(node) {
    return node && node.closest ? node.closest(".katex [data-sym]") : null;
  }

  document.addEventListener("mouseover", function (event) {
    var el = symbolOf(event.target);
    if (el) show(el);
  });
  document.addEventListener("mouseout", function (event) {
    var el = symbolOf(event.target);
    if (el && el === owner && !el.contains(event.relatedTarget) &&
        !(popover && popover.contains(event.relatedTarget))) later();
  });
  document.addEventListener("focusin", function (event) {
    var el = symbolOf(event.target);
    if (el && el.matches(".katex [data-sym]")) show(el);
  });
  document.addEventListener("focusout", function (event) {
    var into = event.relatedTarget;
    if (owner && event.target === owner && !(popover && popover.contains(into))) later();
    if (popover && popover.contains(event.target) && !(into && (popover.contains(into) || into === owner))) later();
  });
  // a tap (or a click) on a symbol shows it; anywhere else closes it
  document.addEventListener("click", function (event) {
    var el = symbolOf(event.target);
    if (el) {
      show(el);
    } else if (popover && !popover.contains(event.target)) {
      hide();
    }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape" || !popover || popover.hidden) return;
    var back = popover.contains(document.activeElement) ? owner : null;
    hide();
    if (back) back.focus();
  });
  window.addEventListener("resize", function () { if (owner && popover && !popover.hidden) place(popover, owner); });
  // navigation.instant replaces the page: a popover of the page before is closed
  if (typeof document$ !== "undefined") document$.subscribe(hide);
})();
