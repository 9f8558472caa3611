/* The comparison of two models (catalog/compare): the reader picks two models; each one's published atlas.json is
   fetched (relative URLs, no server) and their role entries (atlas.document.roles) are aligned role by role, then
   their totals. Labels come from the page (#atlas-compare-text, rendered through the message catalog), numbers are
   formatted in the page's language. The pair is kept in the address (?a=<slug>&b=<slug>) to share it. */
(function () {
  "use strict";

  var ROLES = ["attention", "normalization", "mlp", "positions"];
  var SUPERSCRIPT = {"-": "⁻", "0": "⁰", "1": "¹", "2": "²", "3": "³", "4": "⁴", "5": "⁵", "6": "⁶", "7": "⁷",
                     "8": "⁸", "9": "⁹"};
  var PREFIXES = ["", "k", "M", "G", "T", "P", "E"];

  function fill(template, values) {
    return template.replace(/%\((\w+)\)s/g, function (_, name) { return values[name]; });
  }

  /* A size or cost formula as the JSON writes it ("16384*B*T**2 + 436207616*B*T"), evaluated at `sizes`; null
     where it uses anything but numbers, names, + - * / ** and parentheses. */
  function evaluate(text, sizes) {
    var tokens = String(text).match(/\d+(?:\.\d+)?(?:e[+-]?\d+)?|[A-Za-z_]\w*|\*\*|[-+*\/()]|\S/g) || [];
    var at = 0;
    function peek() { return tokens[at]; }
    function take() { return tokens[at++]; }
    function primary() {
      var t = take();
      if (t === "(") { var v = sum(); if (take() !== ")") { throw new Error("paren"); } return v; }
      if (t === "-") { return -power(); }
      if (t === "+") { return power(); }
      if (/^\d/.test(t)) { return parseFloat(t); }
      if (/^[A-Za-z_]/.test(t) && Object.prototype.hasOwnProperty.call(sizes, t) && peek() !== "(") {
        return sizes[t];
      }
      throw new Error("unknown " + t);
    }
    function power() {
      var base = primary();
      if (peek() === "**") { take(); return Math.pow(base, power()); }
      return base;
    }
    function product() {
      var v = power();
      while (peek() === "*" || peek() === "/") { v = take() === "*" ? v * power() : v / power(); }
      return v;
    }
    function sum() {
      var v = product();
      while (peek() === "+" || peek() === "-") { v = take() === "+" ? v + product() : v - product(); }
      return v;
    }
    try {
      var value = sum();
      return at === tokens.length && isFinite(value) ? value : null;
    } catch (err) {
      return null;
    }
  }

  function Formatter(text) {
    var lang = text.language;
    var whole = new Intl.NumberFormat(lang, {maximumFractionDigits: 0});
    var three = new Intl.NumberFormat(lang, {minimumSignificantDigits: 3, maximumSignificantDigits: 3});
    var six = new Intl.NumberFormat(lang, {maximumSignificantDigits: 6});
    this.number = function (n) { return whole.format(n); };
    this.si = function (value, unit) {
      if (value === 0) { return "0 " + unit; }
      var step = 0;
      while (Math.abs(value) >= 1000 && step < PREFIXES.length - 1) { value /= 1000; step += 1; }
      return three.format(value) + " " + PREFIXES[step] + unit;
    };
    this.value = function (v) {
      if (typeof v === "boolean") { return text.words[String(v)]; }
      if (typeof v === "number") {
        if (Number.isInteger(v)) { return whole.format(v); }
        var k = Math.round(Math.log10(v));
        if (v > 0 && k < 0 && Math.abs(v - Math.pow(10, k)) <= 1e-12 * v) {
          return "10" + String(k).split("").map(function (c) { return SUPERSCRIPT[c]; }).join("");
        }
        return six.format(v);
      }
      return Object.prototype.hasOwnProperty.call(text.words, v) ? text.words[v] : String(v);
    };
  }

  function kindText(entry, text, fmt) {
    var p = entry.params;
    if (entry.role === "attention") {
      var kv = p.kv_heads === undefined ? p.heads : p.kv_heads;
      return (text.kinds[entry.kind] || entry.kind) + " " + fmt.value(p.heads) + "/" + fmt.value(kv);
    }
    if (entry.kind === "moe") { return fill(text.experts, {experts: fmt.value(p.experts), k: fmt.value(p.top_k)}); }
    return text.kinds[entry.kind] || entry.kind;
  }

  function flopsText(entry, text, fmt) {
    if (entry.flops === null || entry.flops === undefined) { return text.none; }
    var out = fmt.si(entry.flops, "FLOPs") + " " + (entry.flops_per === "token" ? text.per_token : text.per_input);
    var sizes = Object.keys(entry.flops_at || {}).map(function (k) { return k + " = " + fmt.number(entry.flops_at[k]); });
    return sizes.length ? out + " " + fill(text.at, {sizes: sizes.join(", ")}) : out;
  }

  function pageOf(model, id) {
    var parts = id ? id.split(".").map(function (s) { return s.replace(/[^A-Za-z0-9_,\-]/g, "-"); }) : [];
    return new URL(parts.length ? parts.join("/") + "/" : "./", model.page).href;
  }

  function cell(tag, content, differs, text) {
    var el = document.createElement(tag);
    if (differs) {
      el.className = "atlas-differs";
      var sr = document.createElement("span");
      sr.className = "atlas-sr";
      sr.textContent = text.differs + ": ";
      el.appendChild(sr);
    }
    if (content instanceof Node) { el.appendChild(content); } else { el.appendChild(document.createTextNode(content)); }
    return el;
  }

  /* One row: its label, then each model's cell; the cells marked where both models have the figure and their texts
     differ. `plain`: a row naming the components, which starts each aligned pair and is never marked. */
  function row(body, label, a, b, text, plain) {
    var tr = document.createElement("tr");
    if (plain) { tr.className = "atlas-compare-start"; }
    var th = document.createElement("th");
    th.scope = "row";
    th.textContent = label;
    tr.appendChild(th);
    var ta = a instanceof Node ? a.textContent : a, tb = b instanceof Node ? b.textContent : b;
    var differs = !plain && ta !== tb && ta !== text.none && tb !== text.none;    /* both have it, not alike */
    tr.appendChild(cell("td", a, differs, text));
    tr.appendChild(cell("td", b, differs, text));
    body.appendChild(tr);
  }

  function link(model, data, entry, text) {
    if (!entry) { return text.none; }
    var comp = data.components.filter(function (c) { return c.id === entry.component; })[0];
    var a = document.createElement("a");
    a.href = pageOf(model, entry.component);
    a.textContent = comp ? comp.name : entry.component;
    return a;
  }

  function table(caption, names) {
    var t = document.createElement("table");
    t.className = "atlas-compare";
    var cap = document.createElement("caption");
    cap.textContent = caption;
    t.appendChild(cap);
    var head = t.createTHead().insertRow();
    ["", names[0], names[1]].forEach(function (n) {
      var th = document.createElement("th");
      th.scope = "col";
      th.textContent = n;
      head.appendChild(th);
    });
    return t;
  }

  function roleTable(role, pair, text, fmt) {
    var lists = pair.map(function (p) { return (p.data.roles || []).filter(function (e) { return e.role === role; }); });
    var t = table(text.roles[role], pair.map(function (p) { return p.data.model; }));
    var body = t.createTBody();
    var n = Math.max(lists[0].length, lists[1].length);
    for (var i = 0; i < n; i++) {
      var ea = lists[0][i], eb = lists[1][i];
      var v = function (e, f) { return e ? f(e) : text.none; };
      row(body, text.component, link(pair[0].model, pair[0].data, ea, text), link(pair[1].model, pair[1].data, eb, text),
          text, true);
      row(body, text.kind, v(ea, function (e) { return kindText(e, text, fmt); }),
          v(eb, function (e) { return kindText(e, text, fmt); }), text);
      var keys = [];
      [ea, eb].forEach(function (e) {
        Object.keys(e ? e.params : {}).forEach(function (k) { if (keys.indexOf(k) < 0) { keys.push(k); } });
      });
      keys.forEach(function (k) {
        var show = function (e) { return e && e.params[k] !== undefined ? fmt.value(e.params[k]) : text.none; };
        row(body, text.labels[k] || k, show(ea), show(eb), text);
      });
      row(body, text.parameters, v(ea, function (e) {
        return fmt.number(e.parameters_per_instance) + " × " + fmt.number(e.instances);
      }), v(eb, function (e) { return fmt.number(e.parameters_per_instance) + " × " + fmt.number(e.instances); }), text);
      row(body, text.flops, v(ea, function (e) { return flopsText(e, text, fmt); }),
          v(eb, function (e) { return flopsText(e, text, fmt); }), text);
      if (role === "attention") {
        var kv = function (e) {
          return e.kv_cache_per_token === null ? text.none : fill(text.values, {n: fmt.number(e.kv_cache_per_token)});
        };
        row(body, text.kv, v(ea, kv), v(eb, kv), text);
      }
    }
    return n ? t : null;
  }

  function forward(data, text, fmt) {
    var ref = data.cost_reference, cost = data.totals.cost;
    if (!ref || !cost) { return text.none; }
    var value = evaluate(cost.flops, ref.sizes);
    if (value === null) { return text.none; }
    var tokens = (ref.sizes.B || 1) * (ref.sizes.T || 1);
    return fmt.si(value / tokens, "FLOPs") + " " + (ref.sizes.T ? text.per_token : text.per_input);
  }

  function totalsTable(pair, text, fmt) {
    var t = table(text.totals, pair.map(function (p) { return p.data.model; }));
    var body = t.createTBody();
    var d = pair.map(function (p) { return p.data; });
    var each = function (f) { return [f(d[0]), f(d[1])]; };
    var add = function (label, f) { var v = each(f); row(body, label, v[0], v[1], text); };
    add(text.total, function (x) { return fmt.number(x.totals.parameters); });
    add(text.trained, function (x) { return fmt.number(x.totals.trained); });
    add(text.frozen, function (x) { return fmt.number(x.totals.frozen); });
    add(text.active, function (x) {
      var n = x.totals.active_parameters;
      return fmt.number(n === undefined || n === null ? x.totals.parameters : n);
    });
    add(text.forward, function (x) { return forward(x, text, fmt); });
    add(text.kv_model, function (x) {
      var n = x.cost_reference && x.cost_reference.kv_cache_bytes_per_token;
      return n === null || n === undefined ? text.none : fill(text.bytes, {n: fmt.number(n)});
    });
    return t;
  }

  function start(form) {
    var text = JSON.parse(document.getElementById("atlas-compare-text").textContent);
    var fmt = new Formatter(text);
    var out = document.querySelector(".atlas-compare-result");
    var models = {};
    document.querySelectorAll(".atlas-compare-models a[data-model]").forEach(function (a) {
      var m = models[a.dataset.model] = models[a.dataset.model] || {};
      m[a.dataset.role] = a.href;
    });
    var cache = {};
    function load(slug) {
      if (!cache[slug]) {
        cache[slug] = fetch(models[slug].data).then(function (r) {
          if (!r.ok) { throw new Error(fill(text.failed, {url: models[slug].data})); }
          return r.json();
        });
      }
      return cache[slug];
    }
    var selects = [form.elements.a, form.elements.b];
    var params = new URLSearchParams(location.search || location.hash.slice(1));
    selects.forEach(function (s) {
      var wanted = params.get(s.name);
      if (wanted && models[wanted]) { s.value = wanted; }
    });
    function show() {
      var slugs = selects.map(function (s) { return s.value; });
      var query = new URLSearchParams({a: slugs[0], b: slugs[1]});
      history.replaceState(null, "", "?" + query.toString() + location.hash.replace(/^#a=.*/, ""));
      Promise.all(slugs.map(load)).then(function (data) {
        var pair = data.map(function (d, i) { return {data: d, model: models[slugs[i]]}; });
        var parts = ROLES.map(function (r) { return roleTable(r, pair, text, fmt); }).filter(Boolean);
        parts.push(totalsTable(pair, text, fmt));
        out.replaceChildren.apply(out, parts.map(function (t) {
          var wrap = document.createElement("div");
          wrap.className = "atlas-compare-table";
          wrap.appendChild(t);
          return wrap;
        }));
        out.dataset.pair = slugs.join(" ");
      }).catch(function (err) {
        var p = document.createElement("p");
        p.className = "atlas-unverified";
        p.textContent = err.message;
        out.replaceChildren(p);
      });
    }
    selects.forEach(function (s) { s.addEventListener("change", show); });
    show();
  }

  function init() {
    var form = document.querySelector("form[data-atlas-compare]");
    if (form && !form.dataset.started) {
      form.dataset.started = "true";
      start(form);
    }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
  if (window.document$ && window.document$.subscribe) { window.document$.subscribe(init); }
})();
